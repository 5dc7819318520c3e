package team

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/teamstatus"
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

// progress tells users which step of the first provisioning runs, once per step:
// a Team already past p (or reconciled before) is not written to.
func (r *Reconciler) progress(ctx context.Context, w *teamstatus.Writer, t *gpuvcv1.Team, p phase) {
	if shownPhase(t) >= p {
		return
	}
	t.Status.ObservedGeneration = t.Generation
	r.condition(t, gpuvcv1.ConditionReady, false, gpuvcv1.ReasonProvisioning, phaseMessage(t, p))
	if _, err := w.Write(ctx, t); err != nil {
		// The summary at the end of the pass reports it.
		log.FromContext(ctx).V(1).Info("reporting provisioning progress", "phase", p, "err", err)
	}
}
