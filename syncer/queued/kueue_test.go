package queued

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func cond(typ, status, msg string) map[string]any {
	return map[string]any{"type": typ, "status": status, "message": msg}
}

func TestWaiting(t *testing.T) {
	for name, tc := range map[string]struct {
		conds []any
		want  string
	}{
		"pending for quota":     {[]any{cond("QuotaReserved", "False", "insufficient unused quota")}, "insufficient unused quota"},
		"admitted":              {[]any{cond("QuotaReserved", "True", ""), cond("Admitted", "True", "")}, ""},
		"not looked at yet":     {nil, ""},
		"finished while queued": {[]any{cond("QuotaReserved", "False", "x"), cond("Finished", "True", "")}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			wl := obj(map[string]any{"status": map[string]any{"conditions": tc.conds}})
			if got := waiting(wl); got != tc.want {
				t.Errorf("waiting = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGPUStanding(t *testing.T) {
	cq := obj(map[string]any{"spec": map[string]any{"resourceGroups": []any{map[string]any{
		"flavors": []any{map[string]any{"resources": []any{
			map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "2"},
			map[string]any{"name": "cpu", "nominalQuota": "1M"},
		}}},
	}}}})
	admitted := func(gpus string) unstructured.Unstructured {
		return *obj(map[string]any{"status": map[string]any{
			"conditions": []any{cond("QuotaReserved", "True", "")},
			"admission":  map[string]any{"podSetAssignments": []any{map[string]any{"resourceUsage": map[string]any{"nvidia.com/gpu": gpus}}}},
		}})
	}
	pending := *obj(map[string]any{"status": map[string]any{"conditions": []any{cond("QuotaReserved", "False", "x")}}})
	got := gpuStanding(cq, []unstructured.Unstructured{admitted("3"), admitted("2"), pending})
	if want := "uses 5 of 4 guaranteed GPUs and borrows 1 (limit 2)"; got != want {
		t.Errorf("gpuStanding = %q, want %q", got, want)
	}
}

// TestGPUStandingInAUsageHistoryPool: the pool's shared ClusterQueue holds no
// guarantee of the team's own, so the standing says what is shared and how
// the order goes.
func TestGPUStandingInAUsageHistoryPool(t *testing.T) {
	cq := obj(map[string]any{"spec": map[string]any{
		"admissionScope": map[string]any{"admissionMode": "UsageBasedAdmissionFairSharing"},
		"resourceGroups": []any{map[string]any{"flavors": []any{map[string]any{"resources": []any{
			map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "0"},
		}}}}},
	}})
	admitted := *obj(map[string]any{"status": map[string]any{
		"conditions": []any{cond("QuotaReserved", "True", "")},
		"admission":  map[string]any{"podSetAssignments": []any{map[string]any{"resourceUsage": map[string]any{"nvidia.com/gpu": "1"}}}},
	}})
	got := gpuStanding(cq, []unstructured.Unstructured{admitted})
	if want := "uses 1 GPUs of the 4 its pool's teams share, where the team with the least recent use for its weight goes first"; got != want {
		t.Errorf("gpuStanding = %q, want %q", got, want)
	}
}

func TestPreemption(t *testing.T) {
	for name, tc := range map[string]struct {
		conds      []any
		wantReason string
	}{
		"reclaimed":       {[]any{cond("QuotaReserved", "False", "x"), map[string]any{"type": "Preempted", "status": "True", "reason": "InCohortReclamation", "message": "m"}}, "InCohortReclamation"},
		"admitted again":  {[]any{cond("QuotaReserved", "True", ""), map[string]any{"type": "Preempted", "status": "False", "reason": "QuotaReserved"}}, ""},
		"never preempted": {[]any{cond("QuotaReserved", "False", "x")}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, _ := preemption(obj(map[string]any{"status": map[string]any{"conditions": tc.conds}}))
			if got != tc.wantReason {
				t.Errorf("preemption reason = %q, want %q", got, tc.wantReason)
			}
		})
	}
}

func TestPreemptedMessage(t *testing.T) {
	got := preemptedMessage("guest", "gpuvc-a100", "InCohortReclamation", "Preempted to accommodate a workload")
	want := "preempted: team guest was using GPUs beyond its guarantee, and another team of cohort gpuvc-a100 took back its own guaranteed GPUs; " +
		"the pod is stopped and not restarted: create it again to queue again; Kueue: Preempted to accommodate a workload"
	if got != want {
		t.Errorf("preemptedMessage =\n%q, want\n%q", got, want)
	}
}
