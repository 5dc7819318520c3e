package share_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// markUnhealthy writes the node annotation the gpuvc agent keeps for failed
// GPUs (gpu/nodeagent tests the agent's side); cleanup removes it.
func markUnhealthy(ctx context.Context, t *testing.T, node, uuids string) {
	t.Helper()
	set := func(ctx context.Context, v any) error {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{contract.AnnotationUnhealthyGPUs: v}}})
		_, err := env.cp.Client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	if err := set(ctx, uuids); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(context.Background(), nil); err != nil {
			t.Error(err)
		}
	})
}

// Once the agent lists a reservation's GPU as failed, the share controller
// places no new share there — a new pod gets another GPU although the failed
// one has room — tells the running pod, and gives the failed GPU back as soon
// as its last pod ends.
func TestSharesSkipAFailedGPU(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	ns := newTeam(ctx, t, "sick", 2)

	createShare(ctx, t, ns, "a", "0.25")
	poll.Pod(ctx, t, env.cp.Client, ns, "a", served)
	res := reservations(ctx, t, ns)
	if len(res) != 1 {
		t.Fatalf("reservations %v, want 1", names(res))
	}
	failed := res[0]
	uuid := failed.Annotations[contract.AnnotationGPUUUID]
	markUnhealthy(ctx, t, failed.Spec.NodeName, "GPU-other-node-gpu,"+uuid)

	note := waitForEvent(ctx, t, poll.Pod(ctx, t, env.cp.Client, ns, "a", served), share.ReasonGPUUnhealthy)
	for _, want := range []string{uuid, failed.Name, failed.Spec.NodeName} {
		if !strings.Contains(note, want) {
			t.Errorf("event %s: %q does not name %s", share.ReasonGPUUnhealthy, note, want)
		}
	}

	createShare(ctx, t, ns, "b", "0.25")
	b := poll.Pod(ctx, t, env.cp.Client, ns, "b", served)
	if g := b.Labels[contract.LabelShareGroup]; g == failed.Name || b.Annotations[contract.AnnotationGPUUUID] == uuid {
		t.Fatalf("pod b placed on reservation %s holding failed GPU %s", g, uuid)
	}
	checkInvariants(ctx, t, ns, share.DefaultMaxPodsPerGPU)

	// The failed GPU's last pod ends: its reservation goes at once (no grace:
	// it takes no share), handing the quota back.
	deletePod(ctx, t, ns, "a")
	poll.Until(ctx, t, 30*time.Second, "reservation "+failed.Name+" deleted", func(ctx context.Context) (bool, error) {
		p, err := env.cp.Client.CoreV1().Pods(ns).Get(ctx, failed.Name, metav1.GetOptions{})
		return err != nil || p.DeletionTimestamp != nil || p.UID != failed.UID, nil
	})
	if p, err := env.cp.Client.CoreV1().Pods(ns).Get(ctx, "b", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod b after a's GPU went: %v %v", err, p.Status.Phase)
	}
}
