package integration

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
)

// The team's vCluster runs as a StatefulSet in the team namespace. Its pod is
// created by the real StatefulSet controller, so the webhook admits it as the
// control plane and pins it to the system pool.
func TestControlPlanePodStaysInSystemPool(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	sts := testobj.StatefulSet("fraud", "team-fraud", testobj.Pod("", "").Label("app", "vcluster").Obj())
	createStatefulSet(ctx, t, sts)

	pod := poll.Pod(ctx, t, env.cp.Client, "team-fraud", "fraud-0", running)
	if pod.Spec.NodeName != "system-0" {
		t.Errorf("control plane ran on %s, want system-0", pod.Spec.NodeName)
	}
	if pod.Annotations[contract.AnnotationRole] != contract.RoleControlPlane || pod.Spec.NodeSelector[contract.LabelPool] != "system" {
		t.Errorf("role %q nodeSelector %v", pod.Annotations[contract.AnnotationRole], pod.Spec.NodeSelector)
	}
}

// A control plane asking for a GPU is refused; the StatefulSet controller
// reports the webhook's reason on the StatefulSet.
func TestControlPlaneGetsNoGPU(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	sts := testobj.StatefulSet("ml", "team-ml", testobj.Pod("", "").GPUs("1").Obj())
	createStatefulSet(ctx, t, sts)

	waitUntil(ctx, t, "the StatefulSet controller reports the refusal", func(ctx context.Context) bool {
		list, err := env.cp.Client.CoreV1().Events("team-ml").List(ctx, metav1.ListOptions{
			FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", "ml"), fields.OneTermEqualSelector("reason", "FailedCreate")).String(),
		})
		if err != nil {
			return false
		}
		for _, e := range list.Items {
			if strings.Contains(e.Message, `admission webhook "`+mutatingWebhook+`" denied the request: gpuvc: `+syncer.ReasonControlPlaneGPU) {
				return true
			}
		}
		return false
	})
	if _, err := env.cp.Client.CoreV1().Pods("team-ml").Get(ctx, "ml-0", metav1.GetOptions{}); err == nil {
		t.Error("control-plane pod with a GPU exists")
	}
}

func createStatefulSet(ctx context.Context, t *testing.T, s *appsv1.StatefulSet) {
	t.Helper()
	c := env.cp.Client.AppsV1().StatefulSets(s.Namespace)
	if _, err := c.Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		policy := metav1.DeletePropagationForeground
		_ = c.Delete(context.Background(), s.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
		deletePod(s.Namespace, s.Name+"-0")
	})
}
