package celpolicy_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// TestControlPlane runs StatefulSets through the real StatefulSet controller:
// only the team's vCluster StatefulSet gets pods in the system pool, and never
// with a GPU.
func TestControlPlane(t *testing.T) {
	localcp.ForTest(t)
	for name, tc := range map[string]struct {
		team        string
		statefulSet string
		template    *testobj.PodWrapper
		refused     []string // nil: the pod is created and runs on system-0
	}{
		"the team's vCluster in the system pool": {"vc1", "vc1", testobj.Pod("", "").InPool(systemPool), nil},
		"the team's vCluster asking for a GPU": {"vc2", "vc2", testobj.Pod("", "").InPool(systemPool).GPUs("1"),
			refusal(c.ReasonControlPlaneGPU, "the vCluster control plane (StatefulSet vc2) asks for nvidia.com/gpu", "limit: no GPUs for control-plane pods")},
		"another StatefulSet in the system pool": {"vc3", "impostor", testobj.Pod("", "").InPool(systemPool),
			refusal(c.ReasonPoolNotSelected, "spec.nodeSelector[gpuvc.dev/pool]=system", "must select pool a100")},
		"the vCluster StatefulSet's pod marked as synced by vCluster": {"vc4", "vc4", testobj.Pod("", "").InPool(systemPool).Label(contract.LabelVClusterManagedBy, "vc4"),
			refusal(c.ReasonPoolNotSelected, "spec.nodeSelector[gpuvc.dev/pool]=system")},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			ns := "team-" + tc.team
			if err := createTeamNamespace(ctx, ns, tc.team, c.Params(pool, maxGPUs, systemPool, tc.team)); err != nil {
				t.Fatal(err)
			}
			sts := testobj.StatefulSet(tc.statefulSet, ns, tc.template.Obj())
			if _, err := env.cp.Client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.refused == nil {
				got := poll.Pod(ctx, t, env.cp.Client, ns, tc.statefulSet+"-0", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
				if got.Spec.NodeName != "system-0" {
					t.Errorf("control plane runs on %s, want system-0", got.Spec.NodeName)
				}
				return
			}
			fenceMessage(t, failedCreate(ctx, t, ns, tc.statefulSet), tc.refused...)
		})
	}
}

// failedCreate waits for the StatefulSet controller's FailedCreate event and
// returns its message: the API server's refusal of the pod.
func failedCreate(ctx context.Context, t *testing.T, ns, statefulSet string) string {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err := env.cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", statefulSet).String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no FailedCreate event for StatefulSet %s/%s: %v", ns, statefulSet, err)
	}
	if _, err := env.cp.Client.CoreV1().Pods(ns).Get(ctx, statefulSet+"-0", metav1.GetOptions{}); err == nil {
		t.Errorf("pod %s-0 exists despite the refusal", statefulSet)
	}
	return msg
}
