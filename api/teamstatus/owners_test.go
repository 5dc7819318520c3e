package teamstatus

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// conditionTypes are every condition type a Team reports.
var conditionTypes = []string{gpuvcv1.ConditionReady, gpuvcv1.ConditionHostResourcesReady,
	gpuvcv1.ConditionVClusterReady, gpuvcv1.ConditionKubeconfigReady, gpuvcv1.ConditionAsleep,
	gpuvcv1.ConditionNetworkPoliciesHonored}

// TestEveryStatusFieldHasOneOwner: a status field or condition type without an
// owner would be written by nobody (or by a writer without a field manager); with
// two, one writer's apply would take it from the other.
func TestEveryStatusFieldHasOneOwner(t *testing.T) {
	owners := map[string][]string{}
	for _, o := range Owners() {
		for _, f := range o.fields {
			owners[f] = append(owners[f], o.manager)
		}
		for _, c := range o.conditions {
			owners["condition "+c] = append(owners["condition "+c], o.manager)
		}
	}
	st := reflect.TypeFor[gpuvcv1.TeamStatus]()
	want := map[string]bool{}
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if name != "conditions" {
			want[name] = true
		}
	}
	for _, c := range conditionTypes {
		want["condition "+c] = true
	}
	for f := range want {
		if len(owners[f]) != 1 {
			t.Errorf("status field %s: owners %v, want exactly one", f, owners[f])
		}
	}
	for f := range owners {
		if !want[f] {
			t.Errorf("%s is owned (%v) but is no status field or condition type", f, owners[f])
		}
	}
	managers := map[string]bool{}
	for _, o := range Owners() {
		if managers[o.manager] {
			t.Errorf("field manager %s twice", o.manager)
		}
		managers[o.manager] = true
	}
}

func condition(typ, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: "m", LastTransitionTime: metav1.NewTime(at)}
}

// TestPartHoldsOnlyTheOwnersFields: what an owner applies is its own fields and
// conditions, present ones only (no zero value of another owner's, or of its
// own omitted fields), times to the second.
func TestPartHoldsOnlyTheOwnersFields(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 500_000_000, time.UTC)
	s := &gpuvcv1.TeamStatus{
		ObservedGeneration: 3,
		Conditions: []metav1.Condition{condition(gpuvcv1.ConditionReady, "Provisioning", at),
			condition(gpuvcv1.ConditionAsleep, gpuvcv1.ReasonAwake, at)},
		Namespace:  "team-ml",
		GPUUsage:   &gpuvcv1.GPUUsage{GPUs: 0},
		GPUSeconds: &gpuvcv1.GPUSeconds{Total: 1 << 60},
		Idle:       &gpuvcv1.IdleStatus{LastWake: &gpuvcv1.Wake{Latency: metav1.Duration{Duration: 1500 * time.Millisecond}}},
	}
	cond := func(typ, reason string) any {
		return map[string]any{"type": typ, "status": "False", "reason": reason, "message": "m", "lastTransitionTime": "2026-11-25T12:00:00Z"}
	}
	for _, tc := range []struct {
		owner Owner
		want  part
	}{
		{Reconciler, part{"observedGeneration": int64(3), "namespace": "team-ml", "gpuUsage": map[string]any{"gpus": int64(0)},
			"conditions": []any{cond(gpuvcv1.ConditionReady, "Provisioning")}}},
		{Idle, part{"idle": map[string]any{"lastWake": map[string]any{"at": nil, "latency": "1.5s"}},
			"conditions": []any{cond(gpuvcv1.ConditionAsleep, gpuvcv1.ReasonAwake)}}},
		{Accounting, part{"gpuSeconds": map[string]any{"since": nil, "sampledAt": nil, "total": int64(1 << 60)}}},
	} {
		if d := cmp.Diff(tc.want, tc.owner.part(s)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.owner.manager, d)
		}
	}
	if p := Idle.part(&gpuvcv1.TeamStatus{ObservedGeneration: 1}); len(p) != 0 {
		t.Errorf("idle's part of a status without its fields: %v", p)
	}
}

// TestUnchangedPartIsNotWritten: conditions compare by type whatever their
// order, and times to the second (what the API server keeps).
func TestUnchangedPartIsNotWritten(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := &gpuvcv1.TeamStatus{Conditions: []metav1.Condition{condition(gpuvcv1.ConditionReady, "r", at), condition(gpuvcv1.ConditionVClusterReady, "v", at)}}
	b := a.DeepCopy()
	slices.Reverse(b.Conditions)
	b.Conditions[0].LastTransitionTime = metav1.NewTime(at.Add(300 * time.Millisecond))
	if !Reconciler.part(a).equal(Reconciler.part(b)) {
		t.Error("the same conditions in another order differ")
	}
	b.Conditions[1].Reason = "changed"
	if Reconciler.part(a).equal(Reconciler.part(b)) {
		t.Error("a changed reason is no change")
	}
	c := a.DeepCopy()
	c.Conditions = append(c.Conditions, condition(gpuvcv1.ConditionAsleep, "x", at))
	c.Idle = &gpuvcv1.IdleStatus{AsleepSince: ptr.To(metav1.NewTime(at))}
	if !Reconciler.part(a).equal(Reconciler.part(c)) {
		t.Error("another owner's fields changed the reconciler's part")
	}
}

// TestUpdateEntries: only status entries of Update operations are upgraded;
// applies, and Updates of the Team itself (finalizers, spec), are kept.
func TestUpdateEntries(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "gpuvc-cli", Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "gpuvc", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: "gpuvc", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		{Manager: "gpuvc-team", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
	}
	got := updateEntries(entries)
	if d := cmp.Diff(entries[2:3], got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
