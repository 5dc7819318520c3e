package team

import (
	"encoding/json"
	"fmt"

	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
	"github.com/gpuvc/gpuvc/vclusters"
)

// vclusterSpec maps a Team to its vCluster release.
func (r *Reconciler) vclusterSpec(t *gpuvcv1.Team) vclusters.Spec {
	chart := r.opts.Chart
	var extra map[string]any
	if v := t.Spec.VCluster; v != nil {
		if v.ChartVersion != "" {
			chart.Version = v.ChartVersion
		}
		if v.Values != nil && len(v.Values.Raw) > 0 {
			// The schema guarantees an object; a decode error leaves extra values out
			// and Apply's validation of the rest still runs.
			_ = json.Unmarshal(v.Values.Raw, &extra)
			removeFenceValues(extra)
		}
	}
	return vclusters.Spec{
		Name:             ReleaseName(t),
		Namespace:        gpuvcv1.HostNamespace(t.Name),
		Pool:             t.Spec.Pool,
		KubeconfigServer: r.serverURL(t),
		ContextName:      t.Name,
		ControlPlanePool: r.opts.ControlPlanePool,
		Persistence:      r.opts.Persistence,
		SyncRealNodes:    r.opts.SyncRealNodes,
		// A namespace enforcing "restricted" admits only non-root control planes.
		RunAsNonRoot: t.Spec.PodSecurity == "restricted",
		// KAI's pod-grouper must see synced pods without vCluster's owner reference.
		SetOwner:    false,
		Chart:       chart,
		ExtraValues: extra,
	}
}

func (r *Reconciler) serverURL(t *gpuvcv1.Team) string {
	if r.opts.ServerURL != nil {
		return r.opts.ServerURL(t)
	}
	return fmt.Sprintf("https://%s.%s.svc", ReleaseName(t), gpuvcv1.HostNamespace(t.Name))
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
