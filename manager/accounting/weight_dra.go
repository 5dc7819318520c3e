package accounting

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DRARates weighs what a spec.dra team's pods hold through DRA claims: each
// device allocated to a claim reserved for a pod that holds it (bound, not
// finished) counts as one whole GPU, as the team's GPU ceiling counts it (a
// DeviceClass does not say how large its devices are), in the pool of that
// pod's node. A claim several pods share counts once; a device given with
// adminAccess is not the team's and counts nothing (the fences refuse it).
func DRARates(pods []corev1.Pod, claims []resourcev1.ResourceClaim, nodes map[string]NodeInfo, defaultPool string) Rates {
	holders := map[types.UID]*corev1.Pod{}
	for i := range pods {
		if Holds(&pods[i]) {
			holders[pods[i].UID] = &pods[i]
		}
	}
	rates := Rates{}
	for _, c := range claims {
		if c.Status.Allocation == nil {
			continue
		}
		var holder *corev1.Pod
		for _, r := range c.Status.ReservedFor {
			if p := holders[r.UID]; p != nil && r.Resource == "pods" && r.APIGroup == "" {
				holder = p
				break
			}
		}
		if holder == nil {
			continue
		}
		pool := defaultPool
		if n, ok := nodes[holder.Spec.NodeName]; ok && n.Pool != "" {
			pool = n.Pool
		}
		for _, d := range c.Status.Allocation.Devices.Results {
			if d.AdminAccess == nil || !*d.AdminAccess {
				rates[Key{pool, KindWhole}]++
			}
		}
	}
	for k, v := range rates {
		if v <= 0 {
			delete(rates, k)
		}
	}
	return rates
}
