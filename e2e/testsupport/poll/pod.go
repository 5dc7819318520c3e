package poll

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// PodTimeout bounds Pod.
const PodTimeout = time.Minute

// Pod polls pod ns/name until cond holds and returns it. A pod not created yet
// (e.g. by its controller) is waited for; on the deadline t fails with
// DescribePod of the last pod seen.
func Pod(ctx context.Context, t testing.TB, c kubernetes.Interface, ns, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, Interval, PodTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || EndedBy(ctx, err) {
			return false, nil // not created yet, or the deadline: the wait's error says so
		}
		if err != nil {
			return false, err
		}
		pod = p
		return cond(p), nil
	})
	if err != nil {
		if pod == nil {
			t.Fatalf("pod %s/%s never appeared: %v", ns, name, err)
		}
		t.Fatalf("pod %s/%s never reached the expected state: %v; last: %s", ns, name, err, DescribePod(pod))
	}
	return pod
}

// DescribePod says where a pod stands for a test failure: phase, node,
// scheduling gates, gpuvc's labels, conditions that are not true and
// containers that wait.
func DescribePod(p *corev1.Pod) string {
	s := []string{fmt.Sprintf("phase %s, node %q", p.Status.Phase, p.Spec.NodeName)}
	if len(p.Spec.SchedulingGates) > 0 {
		s = append(s, fmt.Sprintf("gates %v", p.Spec.SchedulingGates))
	}
	if len(p.Labels) > 0 {
		s = append(s, fmt.Sprintf("labels %v", p.Labels))
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			s = append(s, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			s = append(s, fmt.Sprintf("container %s waiting: %s %s", cs.Name, w.Reason, w.Message))
		}
	}
	return strings.Join(s, ", ")
}
