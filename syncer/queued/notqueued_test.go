package queued

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestWaitsForKueue(t *testing.T) {
	queue := map[string]string{contract.LabelKueueQueueName: contract.KueueLocalQueueName}
	kueueGate := []corev1.PodSchedulingGate{{Name: contract.KueueAdmissionGate}}
	now := metav1.Now()
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"queued and gated":       {corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: queue}, Spec: corev1.PodSpec{SchedulingGates: kueueGate}}, true},
		"admitted (gate lifted)": {corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: queue}}, false},
		"another gate only":      {corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: queue}, Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: contract.GateGPUShare}}}}, false},
		"names no queue":         {corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: kueueGate}}, false},
		"being deleted":          {corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: queue, DeletionTimestamp: &now}, Spec: corev1.PodSpec{SchedulingGates: kueueGate}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := waitsForKueue(&tc.pod); got != tc.want {
				t.Errorf("waitsForKueue = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNotQueuedMessage(t *testing.T) {
	got := notQueuedMessage("team-x", time.Minute, true)
	for _, want := range []string{"no Kueue Workload for this pod after 1m0s", "stays Pending", contract.KueueAdmissionGate,
		"is Kueue running", "namespace team-x", "managedJobsNamespaceSelector selects team-x", "delete the pod and create it again"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	if got := notQueuedMessage("team-x", time.Minute, false); !strings.Contains(got, "Kueue's API (kueue.x-k8s.io Workloads) was not installed") {
		t.Errorf("message without Kueue: %q", got)
	}
}
