package share_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// kubeletNode creates a Ready node in its own pool that looks like a real
// kubelet serving gpuvc's simulated GPUs (a kind trial worker, the local real
// node): gpuvc.dev/simulated=true as the agent publishes it, but no kwok
// annotation. Nothing runs its pods; the test plays the kubelet's part. On
// cleanup its pods are force-deleted (no kubelet confirms a deletion) and the
// node goes.
func kubeletNode(ctx context.Context, t *testing.T, name, pool string) *corev1.Node {
	t.Helper()
	c := env.cp.Client
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("20"), contract.ResourceGPU: resource.MustParse("1"),
	}
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			contract.LabelPool: pool, contract.LabelSimulated: "true",
			contract.LabelGPUMemory: "81920", contract.LabelGPUProduct: "NVIDIA-A100-SXM4-80GB",
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// The node controllers write the new node too (taints): re-read on a conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if n, err = c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		n.Status = corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity.DeepCopy(),
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		}
		n, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The API server taints new nodes not-ready until the node lifecycle
	// controller sees them Ready; a kubelet's heartbeat would clear it.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if n, err = c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		n.Spec.Taints = nil
		n, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if share.RunsNoContainers(n.Labels, n.Annotations) {
		t.Fatalf("node %s with labels %v: the controller would take it for a kwok node", name, n.Labels)
	}
	return n
}

// forceClean deletes every pod of ns at once: on a node without a kubelet a
// graceful deletion never ends.
func forceClean(t *testing.T, c kubernetes.Interface, ns string) {
	t.Cleanup(func() {
		_ = c.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	})
}

// A reservation on a real kubelet with simulated GPUs gets its UUID from
// `gpuvc reserve` (the device the kubelet assigned), never one the controller
// invents: the controller waits, says so on the share pod, and binds with the
// reported UUID. (Before, gpuvc.dev/simulated=true alone made it invent
// GPU-sim-<node>-<n>, racing reserve.)
func TestRealKubeletNodeLeavesTheUUIDToReserve(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	c := env.cp.Client
	node := kubeletNode(ctx, t, "kubelet-sim-0", "kubeletsim")
	ns := testobj.TeamNamespace("kubeletsim", "kubeletsim")
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := env.cp.WaitForServiceAccount(ctx, ns.Name, "default"); err != nil {
		t.Fatal(err)
	}
	forceClean(t, c, ns.Name)

	createShare(ctx, t, ns.Name, "a", "0.5")
	var r corev1.Pod
	poll.UntilSeen(ctx, t, 30*time.Second, "a reservation bound to "+node.Name, func(ctx context.Context) (bool, string, error) {
		res := reservations(ctx, t, ns.Name)
		if len(res) != 1 || res[0].Spec.NodeName != node.Name {
			return false, fmt.Sprint(describe(res)), nil
		}
		r = res[0]
		return true, "", nil
	})
	// A share placed on the bound reservation: the reconcile that places it
	// runs after the one recording simulated UUIDs, so it would be bound at once
	// if the controller had invented one; instead it waits for reserve.
	createShare(ctx, t, ns.Name, "b", "0.25")
	waitForNote(ctx, t, ns.Name, "b", share.ReasonAssigned, "on node "+node.Name+"; waiting for the reservation pod to report its GPU", func() string {
		return fmt.Sprintf("reservations %v", describe(reservations(ctx, t, ns.Name)))
	})
	if got, err := c.CoreV1().Pods(ns.Name).Get(ctx, r.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else {
		r = *got
	}
	if u, ok := r.Annotations[contract.AnnotationGPUUUID]; ok {
		t.Fatalf("reservation %s on a real kubelet got UUID %q from the controller; only gpuvc reserve may report it", r.Name, u)
	}

	// What `gpuvc reserve` does with the device the kubelet assigned (its own
	// permission path is tested in syncer/share/reserve).
	const assigned = "GPU-sim-4f1c2a9e-0000-0000-0000-000000000003"
	reporter := reserveWriter(t)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationGPUUUID, assigned)
	if _, err := reporter.CoreV1().Pods(ns.Name).Patch(ctx, r.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		p := poll.Pod(ctx, t, c, ns.Name, name, func(p *corev1.Pod) bool { return !hasGate(p) })
		if cm := configMap(ctx, t, p); cm.Data[contract.EnvVisibleDevices] != assigned {
			t.Errorf("pod %s sees %s=%q, want the device reserve reported, %q", name, contract.EnvVisibleDevices, cm.Data[contract.EnvVisibleDevices], assigned)
		}
	}
	got, err := c.CoreV1().Pods(ns.Name).Get(ctx, r.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Annotations[contract.AnnotationGPUUUID]; u != assigned {
		t.Errorf("reservation %s holds %q, want %q", r.Name, u, assigned)
	}
}

// reserveWriter is a client that may record a reservation's UUID through the
// webhook, standing in for `gpuvc reserve`.
func reserveWriter(t *testing.T) kubernetes.Interface {
	cfg := rest.CopyConfig(env.cp.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: controllerUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitForNote polls for an event with reason on pod ns/name whose note
// contains want.
func waitForNote(ctx context.Context, t *testing.T, ns, name, reason, want string, more func() string) {
	t.Helper()
	poll.UntilSeen(ctx, t, 30*time.Second, fmt.Sprintf("event %s on %s saying %q", reason, name, want), func(ctx context.Context) (bool, string, error) {
		l, err := env.cp.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("regarding.name", name), fields.OneTermEqualSelector("reason", reason)).String()})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range l.Items {
			if strings.Contains(e.Note, want) {
				return true, "", nil
			}
			seen = append(seen, e.Note)
		}
		return false, fmt.Sprint(seen, " ", more()), nil
	})
}

func describe(pods []corev1.Pod) []string {
	var out []string
	for i := range pods {
		out = append(out, poll.DescribePod(&pods[i]))
	}
	return out
}
