package podstatus

import (
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// ReadyEndpoints counts the distinct ready endpoints in a Service's
// EndpointSlices: what the Service can route to now. A dual-stack pod appears in
// two slices and counts once; an endpoint without a ready condition counts as
// ready, as the EndpointSlice API says consumers must read it.
func ReadyEndpoints(slices []discoveryv1.EndpointSlice) int {
	ready := map[string]bool{}
	for _, sl := range slices {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			id := strings.Join(ep.Addresses, ",")
			if ep.TargetRef != nil {
				id = ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
			}
			ready[id] = true
		}
	}
	return len(ready)
}
