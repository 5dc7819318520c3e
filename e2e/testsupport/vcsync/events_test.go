package vcsync_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/vcsync"
)

// A host event on a synced pod reaches the team's virtual pod, renamed; with the
// virtual pod gone, vCluster drops it.
func TestEventToVirtual(t *testing.T) {
	virtual := gpuPod("trainer", gpus(contract.ResourceGPU, 1))
	virtual.UID = types.UID("0b1c5b7e-1111-2222-3333-444455556666")
	host := vcsync.Translate(t, fraud, virtual)
	host.UID = "host-uid"
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: host.Name + ".1", Namespace: host.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: host.Namespace, Name: host.Name, UID: host.UID},
		Type:           corev1.EventTypeWarning, Reason: "Preempted", Message: "preempted: pod " + host.Name + " stopped",
	}

	got := vcsync.EventToVirtual(t, fraud, ev, host, virtual)
	if got == nil {
		t.Fatal("vCluster created no virtual event")
	}
	if got.Namespace != "default" || got.InvolvedObject.Name != "trainer" || got.InvolvedObject.Namespace != "default" {
		t.Errorf("virtual event %s/%s about %s/%s, want one in default about default/trainer", got.Namespace, got.Name, got.InvolvedObject.Namespace, got.InvolvedObject.Name)
	}
	if got.Reason != "Preempted" || got.Type != corev1.EventTypeWarning || got.Message != "preempted: pod trainer stopped" {
		t.Errorf("virtual event %s %s %q, want Warning Preempted with the virtual pod's name in the message", got.Type, got.Reason, got.Message)
	}

	if got := vcsync.EventToVirtual(t, fraud, ev, host, nil); got != nil {
		t.Errorf("with the virtual pod gone vCluster still created %s/%s", got.Namespace, got.Name)
	}
}
