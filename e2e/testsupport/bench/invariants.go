package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// CheckInvariants asserts what must hold at any instant in the team namespace:
// no reservation over one GPU or over MaxPodsPerGPU shares, every ungated
// share pod on a live reservation's node with that reservation's GPU in its
// ConfigMap, and no two reservations of the host (any team) with one GPU UUID.
func (tm Team) CheckInvariants(ctx context.Context, tb testing.TB) {
	tb.Helper()
	// Pods first: a reservation created after this list cannot be missing.
	shares := tm.SharePods(ctx, tb)
	res := map[string]*corev1.Pod{}
	for _, r := range tm.Reservations(ctx, tb) {
		res[r.Name] = &r
	}
	units, count := map[string]int{}, map[string]int{}
	for _, p := range shares {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		group := p.Labels[contract.LabelShareGroup]
		if Gated(&p) {
			if group != "" && p.DeletionTimestamp == nil {
				u, _ := strconv.Atoi(p.Annotations[contract.AnnotationShareUnits])
				units[group] += u
				count[group]++
			}
			continue
		}
		r := res[group]
		if r == nil {
			tb.Errorf("ungated pod %s has no live reservation (group %q)", p.Name, group)
			continue
		}
		u, err := strconv.Atoi(p.Annotations[contract.AnnotationShareUnits])
		if err != nil {
			tb.Errorf("ungated pod %s: %s %q", p.Name, contract.AnnotationShareUnits, p.Annotations[contract.AnnotationShareUnits])
		}
		units[group] += u
		count[group]++
		if p.Spec.NodeName != "" && p.Spec.NodeName != r.Spec.NodeName {
			tb.Errorf("pod %s runs on %s, its reservation %s on %s", p.Name, p.Spec.NodeName, r.Name, r.Spec.NodeName)
		}
		tm.checkConfigMap(ctx, tb, &p, r)
	}
	for g, u := range units {
		if u > gpushare.UnitsPerGPU {
			tb.Errorf("reservation %s holds %d units: more than one GPU", g, u)
		}
		if count[g] > tm.MaxPodsPerGPU {
			tb.Errorf("reservation %s has %d pods, limit %d", g, count[g], tm.MaxPodsPerGPU)
		}
	}
	tm.checkUUIDs(ctx, tb)
}

// checkConfigMap: an ungated pod reads its reservation's GPU.
func (tm Team) checkConfigMap(ctx context.Context, tb testing.TB, p, r *corev1.Pod) {
	tb.Helper()
	cm, err := tm.Client.CoreV1().ConfigMaps(tm.Namespace).Get(ctx, p.Annotations[contract.AnnotationShareConfigMap], metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && tm.gone(ctx, p.Name):
		// deleted since the list, ConfigMap collected with it
	case err != nil:
		tb.Errorf("ungated pod %s has no share ConfigMap: %v", p.Name, err)
	default:
		if got, want := cm.Data[contract.EnvVisibleDevices], r.Annotations[contract.AnnotationGPUUUID]; got != want || want == "" {
			tb.Errorf("pod %s: %s=%q, its reservation %s holds %q", p.Name, contract.EnvVisibleDevices, got, r.Name, want)
		}
	}
}

// checkUUIDs: no two reservations of the host hold one GPU, and simulated
// nodes' UUIDs name their node.
func (tm Team) checkUUIDs(ctx context.Context, tb testing.TB) {
	tb.Helper()
	all, err := tm.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelRole + "=" + contract.RoleReservation})
	if err != nil {
		tb.Fatal(err)
	}
	seen := map[string]string{}
	for _, r := range all.Items {
		u := r.Annotations[contract.AnnotationGPUUUID]
		if u == "" {
			continue
		}
		if other, dup := seen[u]; dup {
			tb.Errorf("reservations %s and %s/%s both hold GPU %s", other, r.Namespace, r.Name, u)
		}
		seen[u] = r.Namespace + "/" + r.Name
		if !strings.HasPrefix(u, "GPU-sim-"+r.Spec.NodeName+"-") {
			tb.Errorf("reservation %s/%s on simulated node %s has UUID %q", r.Namespace, r.Name, r.Spec.NodeName, u)
		}
	}
}

func (tm Team) gone(ctx context.Context, name string) bool {
	_, err := tm.Client.CoreV1().Pods(tm.Namespace).Get(ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}
