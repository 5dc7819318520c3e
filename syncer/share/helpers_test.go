package share_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/e2e/testobj"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
	"github.com/gpuvc/gpuvc/syncer"
)

func requireHost(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local control plane (run without -short)")
	}
}

func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// newTeam creates team's namespace (pool a100) with a ResourceQuota of gpus
// whole GPUs, and on cleanup deletes its pods and waits until the controller has
// removed its reservations, so the next test finds a100-0's GPUs free.
func newTeam(ctx context.Context, t testing.TB, team string, gpus int) string {
	t.Helper()
	c := env.cp.Client
	ns := testobj.TeamNamespace(team, "a100")
	// Benchmarks run their body more than once: the namespace may exist.
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	q := testobj.Quota("gpuvc-quota", ns.Name, map[string]string{"requests.nvidia.com/gpu": strconv.Itoa(gpus)})
	_, err := c.CoreV1().ResourceQuotas(ns.Name).Create(ctx, q, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // a test changed it on an earlier run (-count)
		var have *corev1.ResourceQuota
		if have, err = c.CoreV1().ResourceQuotas(ns.Name).Get(ctx, q.Name, metav1.GetOptions{}); err == nil {
			have.Spec.Hard = q.Spec.Hard
			_, err = c.CoreV1().ResourceQuotas(ns.Name).Update(ctx, have, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := env.cp.WaitForServiceAccount(ctx, ns.Name, "default"); err != nil {
		t.Fatal(err)
	}
	if err := env.cp.WaitForQuota(ctx, ns.Name, q.Name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanTeam(t, ns.Name) })
	return ns.Name
}

func cleanTeam(t testing.TB, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := env.cp.Client.CoreV1().Pods(ns)
	sel := metav1.ListOptions{LabelSelector: syncer.LabelGPUShare + "=true"}
	if err := c.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, sel); err != nil {
		t.Errorf("deleting share pods of %s: %v", ns, err)
	}
	// The controller, not the test, removes reservations: this checks that it
	// does.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := c.List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		l, _ := c.List(ctx, metav1.ListOptions{})
		t.Errorf("pods of %s left after its share pods were deleted (leaked reservations?): %v", ns, names(l.Items))
	}
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// createShare creates a share pod the way a tenant's pod reaches the host: the
// real webhook gates it.
func createShare(ctx context.Context, t testing.TB, ns, name string, fraction string) *corev1.Pod {
	t.Helper()
	return createPod(ctx, t, testobj.Pod(name, ns).GPUFraction(fraction).Obj())
}

func createPod(ctx context.Context, t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got, err := env.cp.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	if !hasGate(got) {
		t.Fatalf("pod %s/%s was not gated by the webhook: gates %v", p.Namespace, p.Name, got.Spec.SchedulingGates)
	}
	return got
}

func deletePod(ctx context.Context, t testing.TB, ns, name string) {
	t.Helper()
	err := env.cp.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

func hasGate(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == syncer.GateGPUShare })
}

func isRunning(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// waitForPod polls a pod until cond holds and returns it.
func waitForPod(ctx context.Context, t testing.TB, ns, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := env.cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s never reached the expected state: %v; last: gates %v, labels %v, phase %s, node %q",
			ns, name, err, pod.Spec.SchedulingGates, pod.Labels, pod.Status.Phase, pod.Spec.NodeName)
	}
	return pod
}

// waitUntil polls cond with a deadline.
func waitUntil(ctx context.Context, t testing.TB, d time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, d, true, cond); err != nil {
		t.Fatalf("waiting until %s: %v", what, err)
	}
}

func reservations(ctx context.Context, t testing.TB, ns string) []corev1.Pod {
	t.Helper()
	l, err := env.cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: syncer.LabelRole + "=" + syncer.RoleReservation})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func sharePods(ctx context.Context, t testing.TB, ns string) []corev1.Pod {
	t.Helper()
	l, err := env.cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: syncer.LabelGPUShare + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func configMap(ctx context.Context, t testing.TB, p *corev1.Pod) *corev1.ConfigMap {
	t.Helper()
	cm, err := env.cp.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, p.Annotations[syncer.AnnotationShareConfigMap], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("share ConfigMap of %s: %v", p.Name, err)
	}
	return cm
}

// waitForEvent polls for an event with reason on the pod and returns its note.
func waitForEvent(ctx context.Context, t testing.TB, p *corev1.Pod, reason string) string {
	t.Helper()
	var note string
	waitUntil(ctx, t, 30*time.Second, fmt.Sprintf("event %s on %s", reason, p.Name), func(ctx context.Context) (bool, error) {
		l, err := env.cp.Client.EventsV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("regarding.uid", string(p.UID)), fields.OneTermEqualSelector("reason", reason)).String(),
		})
		if err != nil || len(l.Items) == 0 {
			return false, err
		}
		note = l.Items[0].Note
		return true, nil
	})
	return note
}

// checkInvariants asserts what must hold at any instant in a team namespace:
// no reservation over one GPU or over maxPods shares, every ungated share pod
// on a live reservation's node with that reservation's GPU in its ConfigMap, and
// no two reservations of a node with one GPU UUID.
func checkInvariants(ctx context.Context, t testing.TB, ns string, maxPods int) {
	t.Helper()
	// Pods first: a reservation created after this list cannot be missing.
	shares := sharePods(ctx, t, ns)
	res := map[string]*corev1.Pod{}
	for _, r := range reservations(ctx, t, ns) {
		res[r.Name] = &r
	}
	units, count := map[string]int{}, map[string]int{}
	for _, p := range shares {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		group := p.Labels[syncer.LabelShareGroup]
		if hasGate(&p) {
			if group != "" && p.DeletionTimestamp == nil {
				u, _ := strconv.Atoi(p.Annotations[syncer.AnnotationShareUnits])
				units[group] += u
				count[group]++
			}
			continue
		}
		r := res[group]
		if r == nil {
			t.Errorf("ungated pod %s has no live reservation (group %q)", p.Name, group)
			continue
		}
		u, err := strconv.Atoi(p.Annotations[syncer.AnnotationShareUnits])
		if err != nil {
			t.Errorf("ungated pod %s: %s %q", p.Name, syncer.AnnotationShareUnits, p.Annotations[syncer.AnnotationShareUnits])
		}
		units[group] += u
		count[group]++
		if p.Spec.NodeName != "" && p.Spec.NodeName != r.Spec.NodeName {
			t.Errorf("pod %s runs on %s, its reservation %s on %s", p.Name, p.Spec.NodeName, r.Name, r.Spec.NodeName)
		}
		cm, err := env.cp.Client.CoreV1().ConfigMaps(ns).Get(ctx, p.Annotations[syncer.AnnotationShareConfigMap], metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && podGone(ctx, ns, p.Name):
			// deleted since the list, ConfigMap collected with it
		case err != nil:
			t.Errorf("ungated pod %s has no share ConfigMap: %v", p.Name, err)
		default:
			if got, want := cm.Data[syncer.EnvVisibleDevices], r.Annotations[syncer.AnnotationGPUUUID]; got != want || want == "" {
				t.Errorf("pod %s: %s=%q, its reservation %s holds %q", p.Name, syncer.EnvVisibleDevices, got, r.Name, want)
			}
		}
	}
	for g, u := range units {
		if u > gpushare.UnitsPerGPU {
			t.Errorf("reservation %s holds %d units: more than one GPU", g, u)
		}
		if count[g] > maxPods {
			t.Errorf("reservation %s has %d pods, limit %d", g, count[g], maxPods)
		}
	}
	all, err := env.cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: syncer.LabelRole + "=" + syncer.RoleReservation})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, r := range all.Items {
		u := r.Annotations[syncer.AnnotationGPUUUID]
		if u == "" {
			continue
		}
		if other, dup := seen[u]; dup {
			t.Errorf("reservations %s and %s/%s both hold GPU %s", other, r.Namespace, r.Name, u)
		}
		seen[u] = r.Namespace + "/" + r.Name
		if !strings.HasPrefix(u, "GPU-sim-"+r.Spec.NodeName+"-") {
			t.Errorf("reservation %s/%s on simulated node %s has UUID %q", r.Namespace, r.Name, r.Spec.NodeName, u)
		}
	}
}

func podGone(ctx context.Context, ns, name string) bool {
	_, err := env.cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}
