package share

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// outcome collects what a reconcile asks of the next one.
type outcome struct {
	errs    []error
	retry   bool          // a write lost a race: reconcile again at once
	waiting bool          // pods wait for room: look again after RetryInterval
	after   time.Duration // an empty reservation's grace ends
}

func (o *outcome) fail(err error) {
	switch {
	case err == nil, apierrors.IsNotFound(err):
		// The object went away meanwhile: the next reconcile sees it gone.
	case apierrors.IsConflict(err):
		o.retry = true
	default:
		o.errs = append(o.errs, err)
	}
}

func (o *outcome) requeueAfter(d time.Duration) {
	if d > 0 && (o.after == 0 || d < o.after) {
		o.after = d
	}
}

// Reconcile serves one team namespace (request name = namespace): rebuild the
// state from its pods, give simulated reservations their GPU, place waiting
// pods, bind the ones whose GPU is known, delete empty reservations.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	began := c.opts.Clock.Now()
	namespace := req.Name
	team, err := c.opts.Teams.ShareTeam(ctx, namespace)
	if errors.Is(err, ErrNotTeamNamespace) {
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("team", team.Name))
	st, estimate, nodes, err := c.load(ctx, namespace, team)
	if err != nil {
		return ctrl.Result{}, err
	}
	st.limits = team.FractionLimits
	var out outcome
	var simulated []*reservation
	for _, r := range st.reservations {
		if r.open && r.node != "" && r.uuid == "" && nodes[r.node].runsNoContainers() {
			simulated = append(simulated, r)
		}
	}
	out.fail(c.simulateUUIDs(ctx, simulated))
	c.place(ctx, namespace, team, st, estimate, &out)
	c.serve(ctx, st, &out)
	c.warn(st)
	c.collect(ctx, namespace, st, &out)
	c.report(namespace, team, st)
	ctrl.LoggerFrom(ctx).V(1).Info("reconciled", "reservations", len(st.reservations), "pending", len(st.pending),
		"duration", c.opts.Clock.Since(began), "errors", len(out.errs), "retry", out.retry)

	if len(out.errs) > 0 {
		return ctrl.Result{}, errors.Join(out.errs...)
	}
	switch {
	case out.retry:
		return ctrl.Result{RequeueAfter: 50 * time.Millisecond}, nil
	case out.waiting:
		out.requeueAfter(c.opts.RetryInterval)
	}
	return ctrl.Result{RequeueAfter: out.after}, nil
}

// load reads the team's share and reservation pods from the API server and the
// metadata of the nodes involved (from the cache).
func (c *Controller) load(ctx context.Context, namespace string, team Team) (*teamState, int64, map[string]node, error) {
	pods, err := c.listPods(ctx, namespace)
	if err != nil {
		return nil, 0, nil, err
	}
	var bound []string
	for i := range pods {
		if isReservation(&pods[i]) && pods[i].Spec.NodeName != "" {
			bound = append(bound, pods[i].Spec.NodeName)
		}
	}
	nodes, err := c.nodes(ctx, bound)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reading nodes: %w", err)
	}
	memory, unhealthy := map[string]int64{}, map[string]bool{}
	for name, n := range nodes {
		memory[name] = gpuMemory(n.labels)
		for _, u := range n.unhealthyGPUs() {
			unhealthy[u] = true
		}
	}
	estimate, err := c.poolMemory(ctx, team.Pool)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("reading nodes of pool %s: %w", team.Pool, err)
	}
	st := observe(observation{pods: pods, nodeMemory: memory, estimate: estimate, maxPods: team.maxPods(), unhealthy: unhealthy})
	return st, estimate, nodes, nil
}

// listPods reads the namespace's share pods and its reservation pods from the
// API server: two consistent LISTs, sent together. Through the manager a
// reconcile spent most of its time waiting for these answers (~20 ms a LIST
// on 2 busy cores, an execution trace of the ungate benchmark), and one after
// the other it waited twice. Both are sent after every write of the previous
// reconcile was answered, so each sees all of them, as before; another
// writer's change may fall between the two reads, as it could before.
func (c *Controller) listPods(ctx context.Context, namespace string) ([]corev1.Pod, error) {
	selectors := []client.MatchingLabels{
		{contract.LabelGPUShare: "true"},
		{contract.LabelRole: contract.RoleReservation},
	}
	lists := make([]corev1.PodList, len(selectors))
	errs := make([]error, len(selectors))
	var wg sync.WaitGroup
	for i, sel := range selectors {
		wg.Go(func() { errs[i] = c.opts.APIReader.List(ctx, &lists[i], client.InNamespace(namespace), sel) })
	}
	wg.Wait()
	var pods []corev1.Pod
	for i := range lists {
		if errs[i] != nil {
			return nil, fmt.Errorf("listing pods of %s: %w", namespace, errs[i])
		}
		pods = append(pods, lists[i].Items...)
	}
	return pods, nil
}

// warn tells pods about problems the controller cannot fix by itself.
func (c *Controller) warn(st *teamState) {
	for _, ip := range st.invalid {
		c.event(ip.pod, nil, corev1.EventTypeWarning, ReasonInvalid, fmt.Sprintf(
			"gpuvc cannot serve this pod's GPU share: %v; the pod stays gated", ip.err))
	}
	for _, r := range st.reservations {
		if !r.failed {
			continue
		}
		for _, sp := range r.shares {
			c.event(sp.pod, r.pod, corev1.EventTypeWarning, ReasonGPUUnhealthy, fmt.Sprintf(
				"GPU %s held by reservation %s on node %s is marked unhealthy (node condition %s): no new share is placed on it; this pod keeps it until it ends or is evicted",
				r.uuid, r.name, r.node, contract.ConditionGPUHealthy))
		}
	}
	for _, sp := range st.lost {
		c.event(sp.pod, nil, corev1.EventTypeWarning, ReasonReservationLost, fmt.Sprintf(
			"reservation %s that held this pod's GPU is gone (deleted or evicted): the GPU is no longer reserved for it; recreate the pod to get a new share",
			sp.pod.Labels[contract.LabelShareGroup]))
	}
}

// report updates the team's metrics and forgets pods no longer seen.
func (c *Controller) report(namespace string, team Team, st *teamState) {
	seen := map[types.UID]bool{}
	held, units, waiting := 0, 0, len(st.invalid)
	for _, r := range st.reservations {
		seen[r.pod.UID] = true
		if r.open {
			held++
		}
		for _, sp := range r.shares {
			seen[sp.pod.UID] = true
			units += sp.units
			if sp.gated {
				waiting++
			}
		}
	}
	for _, sp := range st.pending {
		seen[sp.pod.UID] = true
		if sp.res == nil {
			waiting++
		}
	}
	for _, ip := range st.invalid {
		seen[ip.pod.UID] = true
	}
	for _, sp := range st.lost {
		seen[sp.pod.UID] = true
	}
	c.memo.keep(namespace, seen)
	c.keepSeen(namespace, seen)
	if m := c.opts.Metrics; m != nil {
		m.Reservations.WithLabelValues(team.Name).Set(float64(held))
		m.AllocatedGPUs.WithLabelValues(team.Name).Set(float64(units) / gpushare.UnitsPerGPU)
		m.GatedPods.WithLabelValues(team.Name).Set(float64(waiting))
	}
}
