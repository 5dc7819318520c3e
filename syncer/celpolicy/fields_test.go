package celpolicy

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/syncer"
)

// probe sets field to a value unlike the zero value every other field keeps.
func probe(t *testing.T, field reflect.Value) {
	t.Helper()
	switch v := field.Addr().Interface().(type) {
	case *string:
		*v = "probe-value"
	case *int64:
		*v = 7
	case *bool:
		*v = true
	case *[]string:
		*v = []string{"probe-value"}
	case *map[corev1.ResourceName]int64:
		*v = map[corev1.ResourceName]int64{"nvidia.com/gpu": 3}
	case *[]corev1.Toleration:
		*v = []corev1.Toleration{{Key: "probe.example/key", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	default:
		t.Fatalf("no probe for a TeamPolicy field of type %s: add one here", field.Type())
	}
}

// fenceGaps lists the TeamPolicy fields that reach one layer and not the
// other, judged against the webhook-only list given.
func fenceGaps(t *testing.T, webhookOnly map[string]string) []string {
	t.Helper()
	var gaps []string
	base := PolicyParams(&syncer.TeamPolicy{})
	typ := reflect.TypeFor[syncer.TeamPolicy]()
	seen := map[string]bool{}
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		seen[name] = true
		var p syncer.TeamPolicy
		probe(t, reflect.ValueOf(&p).Elem().Field(i))
		changed := !maps.Equal(base, PolicyParams(&p))
		reason, listed := webhookOnly[name]
		switch {
		case !changed && !listed:
			gaps = append(gaps, fmt.Sprintf("TeamPolicy.%s changes no CEL parameter: pass it in PolicyParams (and use it in the fence's rules), or list it in webhookOnlyFields with the reason", name))
		case changed && listed:
			gaps = append(gaps, fmt.Sprintf("TeamPolicy.%s is listed webhook-only (%q) but changes the CEL parameters: remove it from webhookOnlyFields", name, reason))
		case listed && reason == "":
			gaps = append(gaps, fmt.Sprintf("TeamPolicy.%s is listed webhook-only without a reason", name))
		}
	}
	for name := range webhookOnly {
		if !seen[name] {
			gaps = append(gaps, fmt.Sprintf("webhookOnlyFields lists %s, which TeamPolicy no longer has", name))
		}
	}
	return gaps
}

// TestEveryTeamPolicyFieldReachesTheFence: a TeamPolicy field that changes
// what the webhook decides must change the CEL fence's parameters too, or be
// listed in webhookOnlyFields with the reason; nothing reaches one layer and
// silently misses the other.
func TestEveryTeamPolicyFieldReachesTheFence(t *testing.T) {
	for _, gap := range fenceGaps(t, webhookOnlyFields) {
		t.Error(gap)
	}
}

// The check catches each kind of gap: a field that is neither a parameter nor
// listed, a listed field that is a parameter, a reason left out, a stale name.
func TestFenceGapsAreFound(t *testing.T) {
	list := maps.Clone(webhookOnlyFields)
	delete(list, "PoolGPUProduct")
	list["Pool"] = "wrongly listed"
	list["KueueCeiling"] = ""
	list["Gone"] = "a field since removed"
	gaps := fenceGaps(t, list)
	want := []string{"TeamPolicy.Pool is listed webhook-only", "TeamPolicy.PoolGPUProduct changes no CEL parameter", "TeamPolicy.KueueCeiling is listed webhook-only without a reason", "lists Gone"}
	if len(gaps) != len(want) {
		t.Fatalf("gaps %q, want one for each of %q", gaps, want)
	}
	for i, w := range want {
		if !strings.Contains(gaps[i], w) {
			t.Errorf("gap %d: %q, want it to say %q", i, gaps[i], w)
		}
	}
}
