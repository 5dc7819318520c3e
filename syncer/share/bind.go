package share

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// Binding a share, in an order that is safe to interrupt anywhere: (1) the env
// ConfigMap is written, (2) one update of the pod records the assignment, pins it
// to the reservation's node and removes the gate. Env cannot change after the
// pod starts, so the ConfigMap must be complete before the gate goes; a restart
// between (1) and (2) redoes both. Until (2) the assignment lives only in memory
// and is recomputed by every reconcile (deterministically, oldest pod first), so
// a pod waiting for its reservation costs no write and a restart loses nothing
// that holds a GPU.

// errConfigMapConflict means the pod's ConfigMap exists and gpuvc did not write
// it: a tenant could have chosen its content, so the pod is not started.
type errConfigMapConflict struct{ name, why string }

func (e *errConfigMapConflict) Error() string {
	return fmt.Sprintf("ConfigMap %s exists and was not written by gpuvc (%s); the pod stays gated until it is removed", e.name, e.why)
}

// shareEnv is the environment the pod's containers read; limits (nil: none)
// adds HAMi-core's variables.
func shareEnv(sp *sharePod, limits *FractionLimits) map[string]string {
	r := sp.res
	env := map[string]string{
		contract.EnvVisibleDevices: r.uuid,
		contract.EnvReservation:    r.name,
	}
	if f := sp.pod.Annotations[contract.AnnotationGPUFraction]; f != "" {
		env[contract.EnvGPUPortion] = f
	} else {
		env[contract.EnvGPUPortion] = portion(sp.units)
	}
	var mem int64
	switch {
	case sp.req.MemoryMiB > 0:
		mem = sp.req.MemoryMiB
	case r.memMiB > 0:
		mem = gpushare.ShareMiB(r.memMiB, sp.units)
	}
	if mem > 0 {
		env[contract.EnvGPUMemoryMiB] = strconv.FormatInt(mem, 10)
	}
	limitEnv(env, limits, mem, sp.units)
	return env
}

// ensureConfigMap creates or repairs the pod's share ConfigMap. It is owned by
// the pod, so the garbage collector removes it with the pod.
func (c *Controller) ensureConfigMap(ctx context.Context, sp *sharePod, limits *FractionLimits) error {
	p := sp.pod
	name := p.Annotations[contract.AnnotationShareConfigMap]
	if !strings.HasPrefix(name, contract.ShareConfigMapPrefix) {
		return fmt.Errorf("pod %s/%s: annotation %s=%q does not name a share ConfigMap", p.Namespace, p.Name, contract.AnnotationShareConfigMap, name)
	}
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: p.Namespace,
			Labels: map[string]string{contract.LabelSharePod: p.Name, contract.LabelShareGroup: sp.res.name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID,
			}},
		},
		Data: shareEnv(sp, limits),
	}
	if team := p.Labels[contract.LabelTeam]; team != "" {
		want.Labels[contract.LabelTeam] = team
	}
	// Create first: the ConfigMap usually does not exist yet.
	err := c.opts.Client.Create(ctx, want)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	var have corev1.ConfigMap
	if err := c.opts.APIReader.Get(ctx, client.ObjectKeyFromObject(want), &have); err != nil {
		return err
	}
	if why := foreign(&have, p.Name); why != "" {
		return &errConfigMapConflict{name: name, why: why}
	}
	if maps.Equal(have.Data, want.Data) && len(have.BinaryData) == 0 && maps.Equal(have.Labels, want.Labels) &&
		slices.Equal(have.OwnerReferences, want.OwnerReferences) {
		return nil
	}
	// An earlier attempt, or a pod of the same name that was deleted.
	have.Data, have.BinaryData, have.Labels, have.OwnerReferences = want.Data, nil, want.Labels, want.OwnerReferences
	return c.opts.Client.Update(ctx, &have)
}

// foreign says why a ConfigMap was not written by gpuvc for pod ("" if it was).
// vCluster marks what it syncs from a virtual cluster, so a tenant's ConfigMap
// that happens to carry the name (or gpuvc's label) is recognised.
func foreign(cm *corev1.ConfigMap, pod string) string {
	for _, m := range []map[string]string{cm.Labels, cm.Annotations} {
		for k := range m {
			if strings.HasPrefix(k, "vcluster.loft.sh/") {
				return "it is synced by vCluster (" + k + ")"
			}
		}
	}
	if cm.Labels[contract.LabelSharePod] != pod {
		return fmt.Sprintf("label %s is %q, not %q", contract.LabelSharePod, cm.Labels[contract.LabelSharePod], pod)
	}
	return ""
}

// bindPod records sp's assignment on the pod, pins it to the reservation's node
// and removes the gate, in one patch guarded by the pod's UID (uidPatch).
func (c *Controller) bindPod(ctx context.Context, sp *sharePod) error {
	orig := sp.pod
	p := orig.DeepCopy()
	r := sp.res
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Labels[contract.LabelShareGroup] = r.name
	p.Annotations[contract.AnnotationShareUnits] = strconv.Itoa(sp.units)
	p.Annotations[contract.AnnotationGPUUUID] = r.uuid
	pinToNode(p, r.node)
	p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.GateGPUShare })
	patch, err := uidPatch(orig, p)
	if err != nil {
		return err
	}
	if err := c.opts.Client.Patch(ctx, p, patch); err != nil {
		return err
	}
	sp.pod, sp.fresh, sp.gated = p, false, false
	return nil
}

// pinToNode requires the pod's node to be node. A gated pod's required node
// affinity may only be narrowed: with no affinity a term is set, otherwise the
// requirement is added to every term (terms are ORed, so adding a term would
// widen it).
func pinToNode(p *corev1.Pod, node string) {
	req := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{req}}},
		}
		return
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		if !slices.ContainsFunc(terms[i].MatchFields, func(r corev1.NodeSelectorRequirement) bool {
			return r.Key == req.Key && r.Operator == req.Operator && slices.Equal(r.Values, req.Values)
		}) {
			terms[i].MatchFields = append(terms[i].MatchFields, req)
		}
	}
}
