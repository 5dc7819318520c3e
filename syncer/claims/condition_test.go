package claims_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/syncer/claims"
)

func warning(uid types.UID, reason, msg string, at time.Time) corev1.Event {
	return corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", UID: uid},
		Type:           corev1.EventTypeWarning,
		Reason:         reason,
		Message:        msg,
		LastTimestamp:  metav1.NewTime(at),
		Source:         corev1.EventSource{Component: "persistentvolume-controller"},
	}
}

func TestCondition(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{UID: "c1"}}
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	notFound := warning("c1", "ProvisioningFailed", `storageclass.storage.k8s.io "nope" not found`, t0.Add(time.Minute))
	cases := map[string]struct {
		events []corev1.Event
		want   *corev1.PersistentVolumeClaimCondition
	}{
		"no events": {},
		"the latest warning on the claim": {
			events: []corev1.Event{
				warning("c1", "FailedBinding", "no persistent volumes available", t0),
				notFound,
				warning("other", "ProvisioningFailed", "another claim's", t0.Add(time.Hour)),
			},
			want: &corev1.PersistentVolumeClaimCondition{
				Type: claims.ConditionType, Status: corev1.ConditionTrue, Reason: "ProvisioningFailed",
				Message: `on the host (persistentvolume-controller): storageclass.storage.k8s.io "nope" not found`,
			},
		},
		"FailedBinding, although Normal": {
			events: []corev1.Event{func() corev1.Event {
				e := warning("c1", "FailedBinding", "no persistent volumes available for this claim and no storage class is set", t0)
				e.Type = corev1.EventTypeNormal
				return e
			}()},
			want: &corev1.PersistentVolumeClaimCondition{
				Type: claims.ConditionType, Status: corev1.ConditionTrue, Reason: "FailedBinding",
				Message: "on the host (persistentvolume-controller): no persistent volumes available for this claim and no storage class is set",
			},
		},
		"other normal events say nothing": {
			events: []corev1.Event{func() corev1.Event {
				e := warning("c1", "WaitForFirstConsumer", "waiting for first consumer", t0)
				e.Type = corev1.EventTypeNormal
				return e
			}()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, claims.Condition(claim, tc.events)); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithCondition(t *testing.T) {
	then, now := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	resizing := corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue}
	failed := &corev1.PersistentVolumeClaimCondition{Type: claims.ConditionType, Status: corev1.ConditionTrue, Reason: "ProvisioningFailed", Message: "a"}
	set := *failed
	set.LastProbeTime, set.LastTransitionTime = then, then
	cases := map[string]struct {
		have    []corev1.PersistentVolumeClaimCondition
		want    *corev1.PersistentVolumeClaimCondition
		result  []corev1.PersistentVolumeClaimCondition
		changed bool
	}{
		"added beside others": {
			have:    []corev1.PersistentVolumeClaimCondition{resizing},
			want:    failed,
			result:  []corev1.PersistentVolumeClaimCondition{resizing, {Type: claims.ConditionType, Status: corev1.ConditionTrue, Reason: "ProvisioningFailed", Message: "a", LastProbeTime: now, LastTransitionTime: now}},
			changed: true,
		},
		"unchanged": {
			have:   []corev1.PersistentVolumeClaimCondition{set},
			want:   failed,
			result: []corev1.PersistentVolumeClaimCondition{set},
		},
		"a new message keeps the transition time": {
			have:    []corev1.PersistentVolumeClaimCondition{set},
			want:    &corev1.PersistentVolumeClaimCondition{Type: claims.ConditionType, Status: corev1.ConditionTrue, Reason: "ProvisioningFailed", Message: "b"},
			result:  []corev1.PersistentVolumeClaimCondition{{Type: claims.ConditionType, Status: corev1.ConditionTrue, Reason: "ProvisioningFailed", Message: "b", LastProbeTime: now, LastTransitionTime: then}},
			changed: true,
		},
		"removed, others kept": {
			have:    []corev1.PersistentVolumeClaimCondition{set, resizing},
			result:  []corev1.PersistentVolumeClaimCondition{resizing},
			changed: true,
		},
		"nothing to remove": {
			have:   []corev1.PersistentVolumeClaimCondition{resizing},
			result: []corev1.PersistentVolumeClaimCondition{resizing},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, changed := claims.WithCondition(corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending, Conditions: tc.have}, tc.want, now)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.result, got.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if got.Phase != corev1.ClaimPending {
				t.Errorf("phase changed to %q", got.Phase)
			}
		})
	}
}
