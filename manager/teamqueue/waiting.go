package teamqueue

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// queuedRequests sums, by resource, what the waiting Workloads request: those
// without quota reserved that have not finished. A pod set asks count times
// its pod's request.
func queuedRequests(workloads []*unstructured.Unstructured) map[string]int64 {
	out := map[string]int64{}
	for _, w := range workloads {
		if conditionTrue(w, "QuotaReserved") || conditionTrue(w, "Finished") {
			continue
		}
		sets, _, _ := unstructured.NestedSlice(w.Object, "spec", "podSets")
		for _, ps := range sets {
			psm, _ := ps.(map[string]any)
			count, _, _ := unstructured.NestedInt64(psm, "count")
			tmpl, _, _ := unstructured.NestedMap(psm, "template", "spec")
			spec := &corev1.PodSpec{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, spec) != nil {
				continue
			}
			for res, n := range podRequests(spec) {
				out[res] += count * n
			}
		}
	}
	return out
}

// podRequests is a pod's request of each resource as the scheduler counts it:
// the containers' sum or the largest init container's, whichever is more.
// Extended resources such as GPUs are requested by their limits.
func podRequests(spec *corev1.PodSpec) map[string]int64 {
	out := map[string]int64{}
	of := func(c corev1.Container, res corev1.ResourceName) int64 {
		if q, ok := c.Resources.Requests[res]; ok {
			return q.Value()
		}
		q := c.Resources.Limits[res]
		return q.Value()
	}
	names := map[corev1.ResourceName]bool{}
	for _, cs := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for _, c := range cs {
			for n := range c.Resources.Requests {
				names[n] = true
			}
			for n := range c.Resources.Limits {
				names[n] = true
			}
		}
	}
	for n := range names {
		var sum, init int64
		for _, c := range spec.Containers {
			sum += of(c, n)
		}
		for _, c := range spec.InitContainers {
			init = max(init, of(c, n))
		}
		out[string(n)] = max(sum, init)
	}
	return out
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == typ {
			return cm["status"] == "True"
		}
	}
	return false
}
