package localcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

func createNamespace(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(name, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	require.NoError(t, localcp.ForTest(t).WaitForServiceAccount(ctx, name, "default"))
}

// waitForPod polls a pod until cond holds and returns it.
func waitForPod(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	last := "never read" // a first Get that fails leaves no pod to describe
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod, last = p, fmt.Sprintf("%+v", p.Status)
		return cond(p), nil
	})
	require.NoError(t, err, "pod %s/%s never reached the expected state; last status: %s", ns, name, last)
	return pod
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

func TestGPUPodToleratingPoolRunsOnGPUNode(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	createNamespace(ctx, t, cp.Client, "whole-gpu")

	pod := testobj.Pod("trainer", "whole-gpu").InPool("a100").GPUs("1").Obj()
	_, err := cp.Client.CoreV1().Pods("whole-gpu").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	got := waitForPod(ctx, t, cp.Client, "whole-gpu", "trainer", running)
	// a100-0 is the only a100 node advertising whole GPUs (a100-mig-0 offers MIG only).
	require.Equal(t, "a100-0", got.Spec.NodeName)
}

func TestMIGPodRunsOnMIGNode(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	createNamespace(ctx, t, cp.Client, "mig")

	pod := testobj.Pod("notebook", "mig").InPool("a100").MIG("1g.10gb", "1").Obj()
	_, err := cp.Client.CoreV1().Pods("mig").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	got := waitForPod(ctx, t, cp.Client, "mig", "notebook", running)
	require.Equal(t, "a100-mig-0", got.Spec.NodeName)
}

func TestGPUPodWithoutTolerationStaysPending(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	createNamespace(ctx, t, cp.Client, "no-toleration")

	pod := testobj.Pod("stray", "no-toleration").GPUs("1").Obj()
	_, err := cp.Client.CoreV1().Pods("no-toleration").Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)

	var event *corev1.Event
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		events, err := cp.Client.CoreV1().Events("no-toleration").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "stray").String(),
		})
		if err != nil {
			return false, err
		}
		for i := range events.Items {
			if events.Items[i].Reason == "FailedScheduling" {
				event = &events.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "no FailedScheduling event for a pod that tolerates no GPU pool")
	require.Contains(t, event.Message, "untolerated taint")

	got, err := cp.Client.CoreV1().Pods("no-toleration").Get(ctx, "stray", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.PodPending, got.Status.Phase)
	require.Empty(t, got.Spec.NodeName)
}

func TestPodOverGPUQuotaIsRefused(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	createNamespace(ctx, t, cp.Client, "quota")
	_, err := cp.Client.CoreV1().ResourceQuotas("quota").Create(ctx,
		testobj.Quota("gpus", "quota", map[string]string{"requests.nvidia.com/gpu": "2"}), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, cp.WaitForQuota(ctx, "quota", "gpus"))

	within := testobj.Pod("within", "quota").InPool("a100").GPUs("2").Obj()
	_, err = cp.Client.CoreV1().Pods("quota").Create(ctx, within, metav1.CreateOptions{})
	require.NoError(t, err, "a pod at the quota must be admitted")

	over := testobj.Pod("over", "quota").InPool("a100").GPUs("1").Obj()
	_, err = cp.Client.CoreV1().Pods("quota").Create(ctx, over, metav1.CreateOptions{})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "exceeded quota"), "unexpected error: %v", err)
}
