package team

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/vclusters"
)

// vclusterSpec maps a Team to its vCluster release.
func (r *Reconciler) vclusterSpec(t *gpuvcv1.Team) vclusters.Spec {
	chart := r.opts.Chart
	extra := withoutFenceValues(r.opts.PlatformValues)
	if v := t.Spec.VCluster; v != nil {
		if v.ChartVersion != "" {
			chart.Version = v.ChartVersion
		}
		if v.Values != nil && len(v.Values.Raw) > 0 {
			// The schema guarantees an object; a decode error leaves the team's values
			// out and Apply's validation of the rest still runs.
			var team map[string]any
			_ = json.Unmarshal(v.Values.Raw, &team)
			extra = vclusters.MergeValues(extra, withoutFenceValues(team))
		}
	}
	if len(extra) == 0 {
		extra = nil
	}
	return vclusters.Spec{
		Name:             gpuvcv1.ReleaseName(t),
		Namespace:        gpuvcv1.HostNamespace(t.Name),
		Pool:             t.Spec.Pool,
		KubeconfigServer: r.serverURL(t),
		ContextName:      t.Name,
		ControlPlanePool: r.opts.ControlPlanePool,
		Persistence:      r.opts.Persistence,
		SyncRealNodes:    r.opts.SyncRealNodes,
		DRA:              t.Spec.DRA != nil,
		// A namespace enforcing "restricted" admits only non-root control planes.
		RunAsNonRoot: t.Spec.PodSecurity == "restricted",
		// KAI's pod-grouper must see synced pods without vCluster's owner reference.
		SetOwner:    false,
		Chart:       chart,
		ExtraValues: extra,
	}
}

// serverURL is the URL the release is installed with. A URL naming the Service's
// address cannot be known before the release exists: the in-cluster name stands
// in (see Options.ServerURLUsesService).
func (r *Reconciler) serverURL(t *gpuvcv1.Team) string {
	if r.opts.ServerURL != nil && !r.opts.ServerURLUsesService {
		return r.opts.ServerURL(t, ServiceAddress{})
	}
	return fmt.Sprintf("https://%s.%s.svc", gpuvcv1.ReleaseName(t), gpuvcv1.HostNamespace(t.Name))
}

// ServiceAddress is where the vCluster control plane's Service answers.
type ServiceAddress struct {
	// ClusterIP of the Service.
	ClusterIP string
	// NodePort of its https port; 0 unless the Service is of type NodePort or
	// LoadBalancer.
	NodePort int32
}

// serviceAddress reads the vCluster control plane's Service, which vCluster's
// chart names after the release.
func (r *Reconciler) serviceAddress(ctx context.Context, spec vclusters.Spec) (ServiceAddress, error) {
	svc := &corev1.Service{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: spec.Namespace, Name: spec.Name}, svc); err != nil {
		return ServiceAddress{}, fmt.Errorf("waiting for Service %s/%s, whose address the team server URL names: %w", spec.Namespace, spec.Name, err)
	}
	addr := ServiceAddress{ClusterIP: svc.Spec.ClusterIP}
	if addr.ClusterIP == "" || addr.ClusterIP == corev1.ClusterIPNone {
		return ServiceAddress{}, fmt.Errorf("Service %s/%s has no ClusterIP (type %s), which the team server URL names", spec.Namespace, spec.Name, svc.Spec.Type)
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == "https" || (addr.NodePort == 0 && p.NodePort != 0) {
			addr.NodePort = p.NodePort
		}
	}
	return addr, nil
}

// fenceValues are vcluster.yaml paths through which a Team's extra values could
// undo gpuvc's fences (pool tolerations, which host nodes the virtual cluster sees,
// where the kubeconfig points); they are dropped from spec.vcluster.values.
var fenceValues = [][]string{
	{"sync", "toHost", "pods", "enforceTolerations"},
	{"sync", "fromHost", "nodes"},
	{"exportKubeConfig"},
	{"controlPlane", "proxy", "extraSANs"},
	{"experimental", "syncSettings", "setOwner"},
}

// withoutFenceValues returns a deep copy of values without the fence paths.
func withoutFenceValues(values map[string]any) map[string]any {
	if values == nil {
		return nil
	}
	out := runtime.DeepCopyJSON(values)
	removeFenceValues(out)
	return out
}

func removeFenceValues(values map[string]any) {
	for _, path := range fenceValues {
		m := values
		for i, key := range path {
			if i == len(path)-1 {
				delete(m, key)
				break
			}
			next, ok := m[key].(map[string]any)
			if !ok {
				break
			}
			m = next
		}
	}
}
