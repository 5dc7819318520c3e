package syncer

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// In-place resize (pods/resize) may change only cpu and memory. vCluster's update
// path resizes host containers to the virtual pod's resources, which for a pod
// whose GPU request gpuvc mapped (whole GPU → MIG, MIG profile of another model)
// names the tenant's original GPU resource: the API server would refuse the whole
// resize and vCluster would stop syncing that pod's status. The webhook keeps every
// other resource as stored, so the resize carries only what may change.

// resizable are the resources in-place resize may change.
var resizable = map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}

// keepUnresizable copies every non-resizable resource entry of old's containers
// onto pod's and drops those old did not have, reporting what it changed.
func keepUnresizable(pod, old *corev1.Pod) []string {
	var kept []string
	oldByName := map[string]corev1.ResourceRequirements{}
	for _, c := range append(append([]corev1.Container{}, old.Spec.InitContainers...), old.Spec.Containers...) {
		oldByName[c.Name] = c.Resources
	}
	fix := func(path string, cs []corev1.Container) {
		for i := range cs {
			prev, ok := oldByName[cs[i].Name]
			if !ok {
				continue
			}
			for _, l := range []struct {
				name   string
				have   *corev1.ResourceList
				stored corev1.ResourceList
			}{{"limits", &cs[i].Resources.Limits, prev.Limits}, {"requests", &cs[i].Resources.Requests, prev.Requests}} {
				for n := range *l.have {
					if _, was := l.stored[n]; !was && !resizable[n] {
						delete(*l.have, n)
						kept = append(kept, fmt.Sprintf("%s[%d].resources.%s: dropped %s", path, i, l.name, n))
					}
				}
				for n, q := range l.stored {
					if resizable[n] {
						continue
					}
					if cur, ok := (*l.have)[n]; !ok || cur.Cmp(q) != 0 {
						if *l.have == nil {
							*l.have = corev1.ResourceList{}
						}
						(*l.have)[n] = q
						kept = append(kept, fmt.Sprintf("%s[%d].resources.%s: kept %s=%s", path, i, l.name, n, q.String()))
					}
				}
			}
		}
	}
	fix("spec.initContainers", pod.Spec.InitContainers)
	fix("spec.containers", pod.Spec.Containers)
	return kept
}

// handleResize lets a resize of a team pod change cpu and memory only, keeping GPU
// resources as gpuvc admitted them.
func (h mutator) handleResize(_ context.Context, req admission.Request) admission.Response {
	pod, old := &corev1.Pod{}, &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(400, err)
	}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return admission.Errored(400, err)
	}
	orig := pod.DeepCopy()
	if len(keepUnresizable(pod, old)) == 0 {
		return admission.Allowed("")
	}
	patch, err := podPatch(orig, pod)
	if err != nil {
		return admission.Errored(500, err)
	}
	return admission.Patched("resources other than cpu and memory kept as admitted", patch...)
}
