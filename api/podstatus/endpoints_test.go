package podstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestReadyEndpoints(t *testing.T) {
	yes, no := true, false
	ep := func(addr, pod string, ready *bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
		if pod != "" {
			e.TargetRef = &corev1.ObjectReference{Namespace: "team-a", Name: pod}
		}
		return e
	}
	slice := func(eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{Endpoints: eps}
	}
	for _, tc := range []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   int
	}{
		{"no slices", nil, 0},
		{"an empty slice", []discoveryv1.EndpointSlice{slice()}, 0},
		{"not ready", []discoveryv1.EndpointSlice{slice(ep("10.0.0.1", "a-0", &no))}, 0},
		{"ready", []discoveryv1.EndpointSlice{slice(ep("10.0.0.1", "a-0", &yes))}, 1},
		{"no condition reads as ready", []discoveryv1.EndpointSlice{slice(ep("10.0.0.1", "", nil))}, 1},
		{"a dual-stack pod counts once", []discoveryv1.EndpointSlice{slice(ep("10.0.0.1", "a-0", &yes)), slice(ep("fd00::1", "a-0", &yes))}, 1},
		{"two pods, one ready", []discoveryv1.EndpointSlice{slice(ep("10.0.0.1", "a-0", &yes), ep("10.0.0.2", "a-1", &no))}, 1},
	} {
		if got := ReadyEndpoints(tc.slices); got != tc.want {
			t.Errorf("%s: %d ready endpoints, want %d", tc.name, got, tc.want)
		}
	}
}
