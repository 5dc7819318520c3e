package share

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// The team's state, rebuilt from host pods on every reconcile: reservation pods
// (label gpuvc.dev/role=reservation) and share pods (label gpuvc.dev/gpu-share)
// with their assignment records (label gpuvc.dev/share-group, annotation
// gpuvc.dev/share-units). Nothing is kept in memory between reconciles.

// reservation is one reservation pod and the shares assigned to it.
type reservation struct {
	pod  *corev1.Pod
	name string
	node string // spec.nodeName; "" until the scheduler binds it
	uuid string // gpuvc.dev/gpu-uuid; "" until reported
	// memMiB is the GPU's memory: the node's label once bound, else the pool's
	// smallest GPU (units computed with it are never too few); 0 = unknown.
	memMiB int64
	// open: neither deleted nor finished nor on a failed GPU, so it may take
	// new shares.
	open bool
	// failed: its GPU is listed unhealthy on its node (gpuvc agent).
	failed bool
	// unschedulable is the scheduler's message while it cannot place the pod.
	unschedulable string
	shares        []*sharePod
}

func (r *reservation) ready() bool { return r.node != "" && r.uuid != "" }

func (r *reservation) used() int {
	u := 0
	for _, s := range r.shares {
		u += s.units
	}
	return u
}

// sharePod is a pod asking for part of a GPU.
type sharePod struct {
	pod   *corev1.Pod
	req   gpushare.Request
	gated bool
	res   *reservation // nil while waiting for placement
	units int
	// fresh: assigned in this reconcile, not yet recorded on the pod.
	fresh bool
}

// invalidPod is a gated share pod whose request cannot be read.
type invalidPod struct {
	pod *corev1.Pod
	err error
}

type teamState struct {
	reservations []*reservation // by name
	byName       map[string]*reservation
	// pending are gated pods without a valid assignment, oldest first.
	pending []*sharePod
	// lost are running pods whose reservation is gone.
	lost    []*sharePod
	invalid []invalidPod
	// limits, if set, go into every share pod's environment (the team's).
	limits *FractionLimits
}

// observation is what the state is built from.
type observation struct {
	pods       []corev1.Pod
	nodeMemory map[string]int64 // GPU memory per node (label nvidia.com/gpu.memory)
	estimate   int64            // GPU memory of an unbound reservation
	maxPods    int
	// unhealthy are the UUIDs of failed GPUs, from the nodes' annotations.
	unhealthy map[string]bool
}

func isReservation(p *corev1.Pod) bool {
	return p.Labels[contract.LabelRole] == contract.RoleReservation
}

func isSharePod(p *corev1.Pod) bool {
	return p.Labels[contract.LabelGPUShare] == "true" && !isReservation(p)
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.GateGPUShare })
}

// request reads the share the webhook validated and recorded.
func request(p *corev1.Pod) (gpushare.Request, error) {
	return gpushare.ParseRequest(p.Annotations[contract.AnnotationGPUFraction], p.Annotations[contract.AnnotationGPUMemory])
}

func byCreation(a, b *corev1.Pod) int {
	return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
}

// observe rebuilds a team's state. Running pods keep their recorded share no
// matter what; a gated pod keeps its assignment only while its reservation is
// open and has room, so a stale or damaged record is never trusted beyond one
// GPU: such pods are placed again.
func observe(o observation) *teamState {
	st := &teamState{byName: map[string]*reservation{}}
	var shares []*corev1.Pod
	for i := range o.pods {
		p := &o.pods[i]
		switch {
		case isReservation(p):
			st.addReservation(p, o)
		case isSharePod(p):
			shares = append(shares, p)
		}
	}
	// Running pods first: their shares are facts; gated ones are plans.
	slices.SortFunc(shares, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(b2i(gated(a)), b2i(gated(b))), byCreation(a, b))
	})
	for _, p := range shares {
		st.observeShare(p, o.maxPods)
	}
	return st
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (st *teamState) addReservation(p *corev1.Pod, o observation) *reservation {
	r := &reservation{
		pod: p, name: p.Name, node: p.Spec.NodeName, uuid: p.Annotations[contract.AnnotationGPUUUID],
	}
	r.failed = r.uuid != "" && o.unhealthy[r.uuid]
	r.open = p.DeletionTimestamp == nil && !finished(p) && !r.failed
	if r.node != "" {
		r.memMiB = o.nodeMemory[r.node]
	} else {
		r.memMiB = o.estimate
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			r.unschedulable = c.Message
		}
	}
	i, _ := slices.BinarySearchFunc(st.reservations, r.name, func(x *reservation, n string) int { return cmp.Compare(x.name, n) })
	st.reservations = slices.Insert(st.reservations, i, r)
	st.byName[r.name] = r
	return r
}

func (st *teamState) observeShare(p *corev1.Pod, maxPods int) {
	isGated := gated(p)
	if finished(p) || (isGated && p.DeletionTimestamp != nil) {
		return // holds no GPU, or will not run
	}
	req, err := request(p)
	if err == nil && isGated && !strings.HasPrefix(p.Annotations[contract.AnnotationShareConfigMap], contract.ShareConfigMapPrefix) {
		err = fmt.Errorf("annotation %s=%q does not name a share ConfigMap (%s...)", contract.AnnotationShareConfigMap, p.Annotations[contract.AnnotationShareConfigMap], contract.ShareConfigMapPrefix)
	}
	if err != nil {
		if isGated {
			st.invalid = append(st.invalid, invalidPod{p, err})
		}
		return
	}
	sp := &sharePod{pod: p, req: req, gated: isGated}
	group := p.Labels[contract.LabelShareGroup]
	r := st.byName[group]
	if !isGated {
		if group == "" {
			return // not served by gpuvc (admitted before it ran): nothing to account
		}
		if r == nil {
			st.lost = append(st.lost, sp)
			return
		}
		// A terminating pod keeps its share: it may hold GPU memory until gone.
		sp.units = recordedUnits(p, req, r)
		sp.res = r
		r.shares = append(r.shares, sp)
		return
	}
	if r != nil && r.open && len(r.shares) < maxPods {
		if u, ok := parseUnits(p); ok && r.used()+u <= gpushare.UnitsPerGPU {
			sp.units, sp.res = u, r
			r.shares = append(r.shares, sp)
			return
		}
	}
	st.pending = append(st.pending, sp)
}

func parseUnits(p *corev1.Pod) (int, bool) {
	u, err := strconv.Atoi(p.Annotations[contract.AnnotationShareUnits])
	return u, err == nil && u >= 1 && u <= gpushare.UnitsPerGPU
}

// recordedUnits is a running pod's share; a damaged record is recomputed, and
// counts as a whole GPU when even that fails (never undercount a running pod).
func recordedUnits(p *corev1.Pod, req gpushare.Request, r *reservation) int {
	if u, ok := parseUnits(p); ok {
		return u
	}
	if u, err := req.Units(r.memMiB); err == nil {
		return u
	}
	return gpushare.UnitsPerGPU
}
