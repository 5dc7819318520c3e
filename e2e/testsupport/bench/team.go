package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// Team is a team namespace on a real API server whose pods pass gpuvc's webhook
// (share pods arrive gated) and whose share pods a share controller serves.
type Team struct {
	// Client creates, reads and deletes the namespace's pods.
	Client    kubernetes.Interface
	Namespace string
	// MaxPodsPerGPU is the team's limit of pods on one shared GPU.
	MaxPodsPerGPU int
	// Local gathers the metrics of the process the share controller runs in
	// (this one, in the benchmarks), and Controller names that controller
	// (share.ControllerName): its reconciles per pod and their time, and the
	// wait in its work queue. Nil reports none.
	Local      prometheus.Gatherer
	Controller string
}

// Gated reports whether p still waits for its GPU share.
func Gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.GateGPUShare })
}

// CreateShare creates a pod asking for gpu-fraction f, the way a tenant's pod
// reaches the host; the webhook must gate it.
func (tm Team) CreateShare(ctx context.Context, tb testing.TB, name, f string) *corev1.Pod {
	tb.Helper()
	return tm.CreateGated(ctx, tb, testobj.Pod(name, tm.Namespace).GPUFraction(f).Obj())
}

// CreateGated creates p and fails unless the webhook gated it.
func (tm Team) CreateGated(ctx context.Context, tb testing.TB, p *corev1.Pod) *corev1.Pod {
	tb.Helper()
	got, err := tm.Client.CoreV1().Pods(tm.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		tb.Fatalf("creating pod %s/%s: %v", tm.Namespace, p.Name, err)
	}
	if !Gated(got) {
		tb.Fatalf("pod %s/%s was not gated by the webhook: gates %v", tm.Namespace, p.Name, got.Spec.SchedulingGates)
	}
	return got
}

// DeletePod deletes a pod at once; a pod already gone is fine.
func (tm Team) DeletePod(ctx context.Context, tb testing.TB, name string) {
	tb.Helper()
	err := tm.Client.CoreV1().Pods(tm.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		tb.Fatal(err)
	}
}

// SharePods lists the namespace's share pods.
func (tm Team) SharePods(ctx context.Context, tb testing.TB) []corev1.Pod {
	tb.Helper()
	return tm.list(ctx, tb, contract.LabelGPUShare+"=true")
}

// Reservations lists the namespace's reservation pods.
func (tm Team) Reservations(ctx context.Context, tb testing.TB) []corev1.Pod {
	tb.Helper()
	return tm.list(ctx, tb, contract.LabelRole+"="+contract.RoleReservation)
}

func (tm Team) list(ctx context.Context, tb testing.TB, selector string) []corev1.Pod {
	tb.Helper()
	l, err := tm.Client.CoreV1().Pods(tm.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		tb.Fatal(err)
	}
	return l.Items
}

// Clean deletes the share pods and waits until the share controller has
// removed the reservations too, so the next measurement finds the GPUs free.
func (tm Team) Clean(tb testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: contract.LabelGPUShare + "=true"}
	if err := tm.Client.CoreV1().Pods(tm.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, sel); err != nil {
		tb.Errorf("deleting share pods of %s: %v", tm.Namespace, err)
	}
	// The controller, not the harness, removes reservations: this checks that
	// it does.
	var left []string // of the last complete look
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var now []string
		for _, sel := range []string{contract.LabelGPUShare + "=true", contract.LabelRole + "=" + contract.RoleReservation} {
			l, err := tm.Client.CoreV1().Pods(tm.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false, nil
			}
			for _, p := range l.Items {
				now = append(now, p.Name)
			}
		}
		left = now
		return len(left) == 0, nil
	})
	if err != nil {
		tb.Errorf("pods of %s left after its share pods were deleted (leaked reservations?): %v", tm.Namespace, left)
	}
}
