// Package teampolicy tells the syncer's webhook, for a host namespace, what the
// owning Team allows: it is the syncer.PolicySource backed by Team objects.
package teampolicy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// GFD labels describing a node's GPUs.
const (
	labelGPUProduct = "nvidia.com/gpu.product"
	labelGPUMemory  = "nvidia.com/gpu.memory"
)

// Source builds TeamPolicies from Teams and the nodes of their pools.
type Source struct {
	Reader     client.Reader
	SystemPool string // pool of vCluster control planes; "" = syncer's default
}

var (
	_ syncer.PolicySource = Source{}
	_ share.TeamSource    = Source{}
)

// TeamPolicy returns the policy of the Team owning namespace. A namespace without
// the gpuvc.dev/team label is not a team namespace; a labelled one whose Team is
// missing or does not own it is an error, so its pods are refused (fail closed).
func (s Source) TeamPolicy(ctx context.Context, namespace string) (*syncer.TeamPolicy, error) {
	ns := &corev1.Namespace{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, syncer.ErrNotTeamNamespace
		}
		return nil, err
	}
	name, ok := ns.Labels[gpuvcv1.LabelTeam]
	if !ok {
		return nil, syncer.ErrNotTeamNamespace
	}
	t := &gpuvcv1.Team{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: name}, t); err != nil {
		return nil, fmt.Errorf("namespace %s is labelled %s=%s but that Team cannot be read: %w", namespace, gpuvcv1.LabelTeam, name, err)
	}
	if gpuvcv1.HostNamespace(t.Name) != namespace {
		return nil, fmt.Errorf("namespace %s is labelled %s=%s but that Team's namespace is %s", namespace, gpuvcv1.LabelTeam, name, gpuvcv1.HostNamespace(t.Name))
	}
	product, memMiB, err := s.poolGPU(ctx, t.Spec.Pool)
	if err != nil {
		return nil, err
	}
	p := &syncer.TeamPolicy{
		Team:             t.Name,
		Namespace:        namespace,
		Pool:             t.Spec.Pool,
		PoolGPUProduct:   product,
		PoolGPUMemoryMiB: memMiB,
		SystemPool:       s.SystemPool,
		MaxGPUsPerPod:    t.EffectiveMaxGPUsPerPod(),
		VClusterName:     team.ReleaseName(t),
	}
	for profile := range t.Spec.Quota.MIG {
		p.AllowedMIGProfiles = append(p.AllowedMIGProfiles, profile)
	}
	sort.Strings(p.AllowedMIGProfiles)
	if g := t.Spec.GPUSharing; g != nil {
		p.FractionsEnabled = g.Fractions
		p.WholeGPUAs = g.WholeGPUAs
	}
	return p, nil
}

// poolGPU reads the GPU product and memory of a pool from its nodes' GFD labels;
// when nodes differ, the most common product wins (ties: alphabetical), so MIG
// mapping targets what most of the pool offers.
func (s Source) poolGPU(ctx context.Context, pool string) (string, int64, error) {
	nodes := &corev1.NodeList{}
	if err := s.Reader.List(ctx, nodes, client.MatchingLabels{gpuvcv1.LabelPool: pool}); err != nil {
		return "", 0, fmt.Errorf("listing nodes of pool %s: %w", pool, err)
	}
	count := map[string]int{}
	memory := map[string]int64{}
	for _, n := range nodes.Items {
		product := n.Labels[labelGPUProduct]
		if product == "" {
			continue
		}
		count[product]++
		if m, err := strconv.ParseInt(n.Labels[labelGPUMemory], 10, 64); err == nil && m > memory[product] {
			memory[product] = m
		}
	}
	best := ""
	for product, c := range count {
		if best == "" || c > count[best] || (c == count[best] && product < best) {
			best = product
		}
	}
	return best, memory[best], nil
}

// ShareTeam tells the share controller the team owning a namespace: its pool and
// how many pods may share one GPU.
func (s Source) ShareTeam(ctx context.Context, namespace string) (share.Team, error) {
	p, err := s.TeamPolicy(ctx, namespace)
	if errors.Is(err, syncer.ErrNotTeamNamespace) {
		return share.Team{}, share.ErrNotTeamNamespace
	}
	if err != nil {
		return share.Team{}, err
	}
	t := &gpuvcv1.Team{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: p.Team}, t); err != nil {
		return share.Team{}, err
	}
	st := share.Team{Name: t.Name, Pool: t.Spec.Pool}
	if g := t.Spec.GPUSharing; g != nil {
		st.MaxPodsPerGPU = int(g.MaxPodsPerSharedGPU)
	}
	return st, nil
}
