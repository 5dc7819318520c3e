package vclusters

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuvc/gpuvc/api/podstatus"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Readiness reasons, in the CamelCase form of condition reasons.
const (
	ReasonReady                = "Ready"
	ReasonReleaseNotFound      = "ReleaseNotFound"
	ReasonReleaseFailed        = "ReleaseFailed"
	ReasonReleasePending       = "ReleasePending"
	ReasonReleaseUninstalling  = "ReleaseUninstalling"
	ReasonControlPlaneMissing  = "ControlPlaneMissing"
	ReasonControlPlaneRollout  = "ControlPlaneRollingOut"
	ReasonControlPlaneStarting = "ControlPlaneStarting"
	ReasonServiceNotRouting    = "ServiceNotRouting"
)

// Readiness says whether a virtual cluster's control plane serves, and if not why,
// in words for a platform engineer (fit for a condition's reason and message).
type Readiness struct {
	Ready   bool
	Reason  string
	Message string
}

// Ready reports whether the release of spec is deployed and its control plane has
// every replica ready at the current revision, listed as a ready endpoint of its
// Service (where the team's kubeconfig points). The chart runs the control plane as a
// StatefulSet <Name>, or as a Deployment <Name> when the datastore is ephemeral. An
// error means the state could not be read, not that it is unready.
func (c *Client) Ready(ctx context.Context, spec Spec) (Readiness, error) {
	cfg, err := c.actionConfig(ctx, spec.Namespace)
	if err != nil {
		return Readiness{}, err
	}
	last, _, err := c.releases.last(ctx, cfg, spec.Namespace, spec.Name)
	var rel *releaseSummary
	if err == nil {
		rel = &last
	} else if !errors.Is(err, driver.ErrReleaseNotFound) {
		return Readiness{}, fmt.Errorf("reading release %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	if r, done := releaseReadiness(spec, rel); done {
		return r, nil
	}
	w, err := c.controlPlaneWorkload(ctx, spec)
	if err != nil {
		return Readiness{}, err
	}
	var pods []corev1.Pod
	if w != nil && w.selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil {
			return Readiness{}, err
		}
		list, err := c.kube.CoreV1().Pods(spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return Readiness{}, fmt.Errorf("listing the control-plane pods of %s/%s: %w", spec.Namespace, spec.Name, err)
		}
		pods = list.Items
	}
	r := workloadReadiness(spec, w, pods)
	if !r.Ready {
		return r, nil
	}
	return c.serviceReadiness(ctx, spec, r)
}

// serviceReadiness holds a ready control plane back until its Service has a ready
// endpoint: the team's kubeconfig points at that Service, and the EndpointSlice
// controller lists a pod some time after the pod turns ready (seconds on a busy
// host), during which the address refuses connections.
func (c *Client) serviceReadiness(ctx context.Context, spec Spec, ready Readiness) (Readiness, error) {
	slices, err := c.kube.DiscoveryV1().EndpointSlices(spec.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + spec.Name,
	})
	if err != nil {
		return Readiness{}, fmt.Errorf("listing the EndpointSlices of Service %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	if podstatus.ReadyEndpoints(slices.Items) == 0 {
		return Readiness{Reason: ReasonServiceNotRouting,
			Message: fmt.Sprintf("vCluster control plane %s/%s is ready but its Service lists no ready endpoint yet "+
				"(the EndpointSlice controller has not caught up)", spec.Namespace, spec.Name)}, nil
	}
	return ready, nil
}

// workload is what readiness needs of a StatefulSet or Deployment.
type workload struct {
	kind                           string
	generation, observedGeneration int64
	want, ready, updated           int32
	// rollingOut: replicas of an older revision remain.
	rollingOut bool
	selector   *metav1.LabelSelector
}

func (c *Client) controlPlaneWorkload(ctx context.Context, spec Spec) (*workload, error) {
	sts, err := c.kube.AppsV1().StatefulSets(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	if err == nil {
		return statefulSetWorkload(sts), nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading StatefulSet %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	dep, err := c.kube.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	if err == nil {
		return deploymentWorkload(dep), nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Deployment %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	return nil, nil
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func statefulSetWorkload(sts *appsv1.StatefulSet) *workload {
	s := sts.Status
	return &workload{
		kind: "StatefulSet", generation: sts.Generation, observedGeneration: s.ObservedGeneration,
		want: replicas(sts.Spec.Replicas), ready: s.ReadyReplicas, updated: s.UpdatedReplicas,
		rollingOut: s.UpdateRevision != "" && s.CurrentRevision != s.UpdateRevision,
		selector:   sts.Spec.Selector,
	}
}

func deploymentWorkload(dep *appsv1.Deployment) *workload {
	s := dep.Status
	want := replicas(dep.Spec.Replicas)
	return &workload{
		kind: "Deployment", generation: dep.Generation, observedGeneration: s.ObservedGeneration,
		want: want, ready: s.ReadyReplicas, updated: s.UpdatedReplicas,
		rollingOut: s.UpdatedReplicas < want || s.Replicas > s.UpdatedReplicas,
		selector:   dep.Spec.Selector,
	}
}

// workloadReadiness judges the control plane: every replica ready, at the
// workload's current generation and revision.
func workloadReadiness(spec Spec, w *workload, pods []corev1.Pod) Readiness {
	name := spec.Namespace + "/" + spec.Name
	if w == nil {
		return Readiness{Reason: ReasonControlPlaneMissing,
			Message: fmt.Sprintf("the release is deployed but its control plane (StatefulSet or Deployment %s) does not exist", name)}
	}
	what := fmt.Sprintf("vCluster control plane %s %s", w.kind, name)
	switch {
	case w.observedGeneration < w.generation:
		return Readiness{Reason: ReasonControlPlaneRollout,
			Message: fmt.Sprintf("%s has a change its controller has not processed yet", what)}
	case w.rollingOut:
		return Readiness{Reason: ReasonControlPlaneRollout,
			Message: fmt.Sprintf("%s is rolling out a change: %d of %d replicas updated, %d ready%s",
				what, w.updated, w.want, w.ready, podHint(pods))}
	case w.ready < w.want:
		return Readiness{Reason: ReasonControlPlaneStarting,
			Message: fmt.Sprintf("%s is starting: %d of %d replicas ready%s", what, w.ready, w.want, podHint(pods))}
	}
	return Readiness{Ready: true, Reason: ReasonReady,
		Message: fmt.Sprintf("%s is ready: %d of %d replicas", what, w.ready, w.want)}
}

// podHint explains the first control-plane pod that is not ready: unschedulable,
// waiting on an image, crashing — what a platform engineer looks at next.
func podHint(pods []corev1.Pod) string {
	if why := podstatus.FirstNotReady(pods); why != "" {
		return "; " + why
	}
	return ""
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// releaseReadiness judges the Helm release; done is false when it is deployed and
// the workload decides.
func releaseReadiness(spec Spec, rel *releaseSummary) (Readiness, bool) {
	name := spec.Namespace + "/" + spec.Name
	if rel == nil {
		return Readiness{Reason: ReasonReleaseNotFound,
			Message: fmt.Sprintf("vCluster release %s is not installed", name)}, true
	}
	st := rel.Status
	switch {
	case st == release.StatusDeployed:
		return Readiness{}, false
	case st == release.StatusFailed:
		return Readiness{Reason: ReasonReleaseFailed,
			Message: fmt.Sprintf("vCluster release %s revision %d failed: %s", name, rel.Version, rel.Description)}, true
	case st.IsPending():
		return Readiness{Reason: ReasonReleasePending,
			Message: fmt.Sprintf("vCluster release %s revision %d is %s", name, rel.Version, st)}, true
	case st == release.StatusUninstalling || st == release.StatusUninstalled:
		return Readiness{Reason: ReasonReleaseUninstalling,
			Message: fmt.Sprintf("vCluster release %s is %s", name, st)}, true
	default:
		return Readiness{Reason: ReasonReleaseFailed,
			Message: fmt.Sprintf("vCluster release %s revision %d is in state %q", name, rel.Version, st)}, true
	}
}
