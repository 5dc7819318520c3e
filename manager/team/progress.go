package team

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// phase is a step of a team's first provisioning that users see in the Ready
// condition (reason Provisioning) before the slow Helm install has finished.
type phase int

const (
	phaseNone      phase = iota
	phaseHost            // before the namespace
	phasePolicies        // namespace made; quota, limits, policies, RBAC next
	phaseChart           // host objects done; the Helm install runs
	phaseCompleted       // a summary of a whole pass is on the Team
)

// phaseMessage is what the Ready condition says during p.
func phaseMessage(t *gpuvcv1.Team, p phase) string {
	ns := gpuvcv1.HostNamespace(t.Name)
	switch p {
	case phaseHost:
		return "creating namespace, quota and policies; installing the vCluster chart next"
	case phasePolicies:
		return fmt.Sprintf("namespace %s created; applying quota, limits, admission parameters, network policies and RBAC; installing the vCluster chart next", ns)
	case phaseChart:
		return fmt.Sprintf("host resources ready; installing the vCluster chart (release %s/%s); waiting for its control plane next", ns, gpuvcv1.ReleaseName(t))
	}
	return ""
}

// shownPhase is the phase t's Ready condition shows: phaseNone before the
// manager's first word, phaseCompleted once a pass has been summarised (or the
// spec changed since), when progress is no longer reported step by step.
func shownPhase(t *gpuvcv1.Team) phase {
	c := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionReady)
	if c == nil {
		return phaseNone
	}
	if c.Reason != gpuvcv1.ReasonProvisioning || c.ObservedGeneration != t.Generation {
		return phaseCompleted
	}
	for p := phaseHost; p < phaseCompleted; p++ {
		if c.Message == phaseMessage(t, p) {
			return p
		}
	}
	return phaseCompleted
}

// statusWriter writes a Team's status only when it changed, and never over a
// status written by someone else since it was read (the idle policy's Asleep
// condition, GPU accounting): a merge patch replaces the whole conditions list.
type statusWriter struct {
	client  ctrl.Client
	written *gpuvcv1.Team // the status as last read or written
}

func newStatusWriter(c ctrl.Client, t *gpuvcv1.Team) *statusWriter {
	return &statusWriter{client: c, written: t.DeepCopy()}
}

// write patches t's status if it differs from the last one written. A conflict
// (someone wrote since) is returned: the caller leaves the Team for the next
// reconcile, which the other write's watch event brings.
func (w *statusWriter) write(ctx context.Context, t *gpuvcv1.Team) error {
	if equality.Semantic.DeepEqual(w.written.Status, t.Status) {
		return nil
	}
	if err := w.client.Status().Patch(ctx, t, ctrl.MergeFromWithOptions(w.written, ctrl.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	w.written = t.DeepCopy()
	return nil
}

// progress tells users which step of the first provisioning runs, once per step:
// a Team already past p (or reconciled before) is not written to.
func (r *Reconciler) progress(ctx context.Context, w *statusWriter, t *gpuvcv1.Team, p phase) {
	if shownPhase(t) >= p {
		return
	}
	t.Status.ObservedGeneration = t.Generation
	r.condition(t, gpuvcv1.ConditionReady, false, gpuvcv1.ReasonProvisioning, phaseMessage(t, p))
	if err := w.write(ctx, t); err != nil {
		// The summary at the end of the pass reports; a conflict there ends it.
		log.FromContext(ctx).V(1).Info("reporting provisioning progress", "phase", p, "err", err)
	}
}
