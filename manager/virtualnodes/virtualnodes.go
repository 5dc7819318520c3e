// Package virtualnodes shows a team its own GPUs on the nodes of its virtual
// cluster. Unless the manager syncs real nodes (--sync-real-nodes), vCluster
// shows a team one made-up node per host node its pods run on (label
// vcluster.loft.sh/fake-node=true) with invented CPU and memory and no GPU at
// all, so `kubectl describe node` told a team nothing of its GPUs. The Syncer
// writes into each such node's capacity and allocatable the GPU resources of
// the team's quota the host node offers — nvidia.com/gpu and each
// nvidia.com/mig-<profile> of spec.quota, at most the team's quota and at most
// what the host node allocates — and removes any other NVIDIA resource. The
// team's use is then what `kubectl describe node` sums under "Allocated
// resources": its own pods' GPU requests on that node. A team never sees the
// host's inventory: not the GPUs other teams hold there, not the node's other
// MIG profiles, not another pool's nodes (vCluster shows only nodes of the
// team's own pods).
package virtualnodes

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamevents"
)

// FakeNodeLabel marks the nodes vCluster makes up for a virtual cluster.
const FakeNodeLabel = "vcluster.loft.sh/fake-node"

// Syncer writes the teams' GPU quota into their virtual clusters' nodes.
type Syncer struct {
	// Reader reads what connecting to a team's control plane needs (its
	// kubeconfig Secret, pods, Service), uncached.
	Reader client.Reader
	// Cache reads Teams and host nodes: the manager's cache, so a pass that
	// changes nothing asks the host API server nothing. Nil: Reader.
	Cache client.Reader
	// Dial connects to a control-plane pod (nil: a net.Dialer with a 5s
	// timeout), as manager/teamevents does.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Parallel bounds the teams synced at once (default 8): a team whose
	// control plane does not answer costs its timeout, not every team's.
	Parallel int

	once     sync.Once
	sessions *teamevents.Sessions
}

// Run syncs every team every interval until ctx ends; the manager runs it on
// the leader.
func (s *Syncer) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, s.Tick, interval)
}

// Tick syncs every team once; a team whose control plane does not serve
// (asleep, starting) is left for a later tick.
func (s *Syncer) Tick(ctx context.Context) {
	s.init()
	teams := &gpuvcv1.TeamList{}
	if err := s.Cache.List(ctx, teams); err != nil {
		log.FromContext(ctx).Error(err, "virtual nodes: listing teams")
		return
	}
	live := map[string]bool{}
	slots := make(chan struct{}, s.Parallel)
	var wg sync.WaitGroup
	for i := range teams.Items {
		t := &teams.Items[i]
		if !t.DeletionTimestamp.IsZero() || asleep(t) {
			continue
		}
		live[gpuvcv1.HostNamespace(t.Name)] = true
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := s.SyncTeam(ctx, t); err != nil && ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "virtual nodes: showing the team its GPUs", "team", t.Name)
			}
		})
	}
	wg.Wait()
	// A sleeping team's session would dial a pod that is gone.
	s.sessions.Keep(func(ns string) bool { return live[ns] })
}

func (s *Syncer) init() {
	s.once.Do(func() {
		if s.Cache == nil {
			s.Cache = s.Reader
		}
		if s.Parallel <= 0 {
			s.Parallel = 8
		}
		s.sessions = teamevents.NewSessions(s.Reader, s.Dial, "gpuvc-manager/virtual-nodes", 5*time.Minute)
	})
}

// asleep: the idle policy scaled the team's control plane to zero; looking
// for it would cost host reads and find nothing.
func asleep(t *gpuvcv1.Team) bool {
	return meta.IsStatusConditionTrue(t.Status.Conditions, gpuvcv1.ConditionAsleep)
}

// SyncTeam writes team t's GPU resources into the fake nodes of its virtual
// cluster, through a ready control-plane pod (never the Service, which wakes
// a sleeping cluster). The client is kept for the next pass until a request
// through it fails.
func (s *Syncer) SyncTeam(ctx context.Context, t *gpuvcv1.Team) error {
	s.init()
	ns := gpuvcv1.HostNamespace(t.Name)
	vc, err := s.sessions.Client(ctx, ns, gpuvcv1.ReleaseName(t))
	if err != nil || vc == nil {
		return client.IgnoreNotFound(err)
	}
	if err := s.syncNodes(ctx, t, vc); err != nil {
		s.sessions.Failed(ns)
		return err
	}
	return nil
}

func (s *Syncer) syncNodes(ctx context.Context, t *gpuvcv1.Team, vc kubernetes.Interface) error {
	nodes, err := vc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FakeNodeLabel + "=true"})
	if err != nil {
		return fmt.Errorf("listing the nodes of team %s's virtual cluster: %w", t.Name, err)
	}
	for i := range nodes.Items {
		v := &nodes.Items[i]
		host := &corev1.Node{}
		if err := s.Cache.Get(ctx, types.NamespacedName{Name: v.Name}, host); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue // vCluster removes the fake node soon
			}
			return err
		}
		patch := Patch(v.Status, Want(t.Spec.Quota, host.Status.Allocatable))
		if patch == nil {
			continue
		}
		if _, err := vc.CoreV1().Nodes().Patch(ctx, v.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "gpuvc-virtual-nodes"}, "status"); err != nil {
			return fmt.Errorf("writing team %s's GPUs on its node %s: %w", t.Name, v.Name, err)
		}
	}
	return nil
}

// Want is what a team's node shows of the GPUs: for each GPU resource of the
// quota (whole GPUs, each MIG profile) the smaller of the quota and what the
// host node allocates; nothing the host node lacks, nothing the quota lacks.
// A quota field left unset (not limited by gpuvc) shows nothing: the host's
// inventory is not the team's.
func Want(q gpuvcv1.Quota, host corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	show := func(name string, quota int64) {
		h := host[corev1.ResourceName(name)]
		if n := min(h.Value(), quota); n > 0 {
			out[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	if q.GPUs != nil {
		show(contract.ResourceGPU, int64(*q.GPUs))
	}
	for profile, count := range q.MIG {
		show(contract.ResourceMIGPrefix+profile, int64(count))
	}
	return out
}

// Patch is the merge patch of a node's status that makes its NVIDIA resources
// in capacity and allocatable want (other NVIDIA resources removed, the rest
// of the status untouched); nil when they already are.
func Patch(status corev1.NodeStatus, want corev1.ResourceList) []byte {
	if nvidia(status.Capacity).Equal(want) && nvidia(status.Allocatable).Equal(want) {
		return nil
	}
	list := func(have corev1.ResourceList) map[string]any {
		out := map[string]any{}
		for name := range nvidia(have) {
			out[string(name)] = nil
		}
		for name, q := range want {
			out[string(name)] = q.String()
		}
		return out
	}
	b, err := json.Marshal(map[string]any{"status": map[string]any{
		"capacity": list(status.Capacity), "allocatable": list(status.Allocatable),
	}})
	if err != nil {
		panic(err) // strings and nils always marshal
	}
	return b
}

// resources is a ResourceList compared by value.
type resources corev1.ResourceList

func (r resources) Equal(o corev1.ResourceList) bool {
	if len(r) != len(o) {
		return false
	}
	for name, want := range r {
		q, ok := o[name]
		if !ok || q.Cmp(want) != 0 {
			return false
		}
	}
	return true
}

// nvidia is the NVIDIA resources of a list.
func nvidia(l corev1.ResourceList) resources {
	out := resources{}
	for name, q := range l {
		if strings.HasPrefix(string(name), contract.NVIDIAPrefix) {
			out[name] = q
		}
	}
	return out
}
