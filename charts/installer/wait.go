package installer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/podstatus"
	"github.com/gpuvc/gpuvc/charts"
)

// Workload is an object of the release whose readiness --wait waits for: the
// Deployments (the manager), the DaemonSets (the agents), and the webhook Service,
// ready once it has an endpoint (the webhook fails closed without one).
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (w Workload) String() string { return w.Kind + " " + w.Name }

// WorkloadStatus is a workload's readiness at one moment, in words.
type WorkloadStatus struct {
	Workload
	Ready  bool   `json:"ready"`
	Status string `json:"status"`
}

// Progress receives a workload's status when it is first seen and each time it
// changes while waiting.
type Progress func(elapsed time.Duration, s WorkloadStatus)

// Workloads lists the workloads in a release manifest, in the manifest's order;
// objects without a namespace get the release's.
func Workloads(manifest, namespace string) ([]Workload, error) {
	var out []Workload
	for _, doc := range releaseutil.SplitManifests(manifest) {
		var obj metav1.PartialObjectMetadata
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("reading the release manifest: %w", err)
		}
		switch {
		case obj.Kind == "Deployment" || obj.Kind == "DaemonSet":
		case obj.Kind == "Service" && obj.Name == charts.WebhookServiceName:
		default:
			continue
		}
		ns := obj.Namespace
		if ns == "" {
			ns = namespace
		}
		out = append(out, Workload{Kind: obj.Kind, Namespace: ns, Name: obj.Name})
	}
	// SplitManifests returns a map; keep a stable, readable order.
	order := map[string]int{"Deployment": 0, "Service": 1, "DaemonSet": 2}
	sort.SliceStable(out, func(i, j int) bool {
		if order[out[i].Kind] != order[out[j].Kind] {
			return order[out[i].Kind] < order[out[j].Kind]
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// statusOf reads one workload's status from the cluster; when it is not ready it
// says why, from its first pod that is not ready.
func statusOf(ctx context.Context, cs kubernetes.Interface, w Workload) (WorkloadStatus, error) {
	s := WorkloadStatus{Workload: w}
	var selector *metav1.LabelSelector
	switch w.Kind {
	case "Deployment":
		d, err := cs.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.Status = "not created yet"
			return s, nil
		}
		if err != nil {
			return s, err
		}
		s.Ready, s.Status = deploymentStatus(d)
		selector = d.Spec.Selector
	case "DaemonSet":
		ds, err := cs.AppsV1().DaemonSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			s.Status = "not created yet"
			return s, nil
		}
		if err != nil {
			return s, err
		}
		s.Ready, s.Status = daemonSetStatus(ds)
		selector = ds.Spec.Selector
	case "Service":
		slices, err := cs.DiscoveryV1().EndpointSlices(w.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + w.Name,
		})
		if err != nil {
			return s, err
		}
		s.Ready, s.Status = endpointsStatus(slices.Items)
		return s, nil
	default:
		return s, fmt.Errorf("cannot tell whether %s is ready", w)
	}
	if s.Ready || selector == nil {
		return s, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return s, nil
	}
	pods, err := cs.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return s, err
	}
	if why := podstatus.FirstNotReady(pods.Items); why != "" {
		s.Status += "; " + why
	}
	return s, nil
}

// deploymentStatus follows `kubectl rollout status`: every replica updated, no old
// one left, every updated one available.
func deploymentStatus(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.ObservedGeneration < d.Generation:
		return false, "waiting for the deployment controller to see the new spec"
	case hasCondition(d.Status.Conditions, "Progressing", "ProgressDeadlineExceeded"):
		return false, fmt.Sprintf("%d/%d replicas available, rollout stalled (progress deadline exceeded)", st.AvailableReplicas, want)
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d/%d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas terminating", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		return false, fmt.Sprintf("%d/%d replicas available", st.AvailableReplicas, want)
	}
	return true, fmt.Sprintf("%d/%d replicas available", st.AvailableReplicas, want)
}

func hasCondition(conds []appsv1.DeploymentCondition, typ, reason string) bool {
	for _, c := range conds {
		if string(c.Type) == typ && c.Reason == reason {
			return true
		}
	}
	return false
}

// daemonSetStatus: a pod on every node the DaemonSet selects, updated and available.
func daemonSetStatus(ds *appsv1.DaemonSet) (bool, string) {
	st := ds.Status
	desired := st.DesiredNumberScheduled
	switch {
	case st.ObservedGeneration < ds.Generation:
		return false, "waiting for the daemonset controller to see the new spec"
	case desired == 0:
		return true, "0 pods: no node matches its node selector, affinity and tolerations"
	case st.UpdatedNumberScheduled < desired:
		return false, fmt.Sprintf("%d/%d pods updated", st.UpdatedNumberScheduled, desired)
	case st.NumberAvailable < desired:
		return false, fmt.Sprintf("%d/%d pods available", st.NumberAvailable, desired)
	}
	return true, fmt.Sprintf("%d/%d pods available", st.NumberAvailable, desired)
}

// endpointsStatus counts the Service's ready endpoints.
func endpointsStatus(slices []discoveryv1.EndpointSlice) (bool, string) {
	ready := podstatus.ReadyEndpoints(slices)
	if ready == 0 {
		return false, "no ready endpoints (the webhook fails closed: pods in team namespaces are refused until one is ready)"
	}
	if ready == 1 {
		return true, "1 ready endpoint"
	}
	return true, fmt.Sprintf("%d ready endpoints", ready)
}

// Snapshot reads every workload's status once.
func Snapshot(ctx context.Context, cs kubernetes.Interface, ws []Workload) ([]WorkloadStatus, error) {
	out := make([]WorkloadStatus, 0, len(ws))
	for _, w := range ws {
		s, err := statusOf(ctx, cs, w)
		if err != nil {
			return out, fmt.Errorf("reading %s: %w", w, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// WaitReady polls the workloads every interval until all are ready or ctx ends,
// reporting each status when first seen and on every change. On timeout the error
// names what is not ready and why.
func WaitReady(ctx context.Context, cs kubernetes.Interface, ws []Workload, interval time.Duration, progress Progress) ([]WorkloadStatus, error) {
	start := time.Now()
	seen := map[Workload]WorkloadStatus{}
	var last []WorkloadStatus
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		now, err := Snapshot(ctx, cs, ws)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			return false, err
		}
		last = now
		all := true
		for _, s := range now {
			if prev, ok := seen[s.Workload]; !ok || prev != s {
				seen[s.Workload] = s
				if progress != nil {
					progress(time.Since(start), s)
				}
			}
			all = all && s.Ready
		}
		return all, nil
	})
	if err == nil {
		return last, nil
	}
	if wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		var pending []string
		for _, s := range last {
			if !s.Ready {
				pending = append(pending, s.String()+": "+s.Status)
			}
		}
		if len(pending) == 0 {
			pending = []string{"nothing could be read before the deadline"}
		}
		return last, fmt.Errorf("not ready after %s:\n  %s", time.Since(start).Round(time.Second), strings.Join(pending, "\n  "))
	}
	return last, err
}
