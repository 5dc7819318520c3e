package share_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer/share"
)

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

func cleanTeam(t testing.TB, ns string) { team(ns, share.DefaultMaxPodsPerGPU).Clean(t) }

// team is the harness view of a test namespace (e2e/testsupport/bench), with the
// team's limit of pods per GPU.
func team(ns string, maxPods int) bench.Team {
	return bench.Team{Client: env.cp.Client, Namespace: ns, MaxPodsPerGPU: maxPods}
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
	return team(ns, 0).CreateShare(ctx, t, name, fraction)
}

func createPod(ctx context.Context, t testing.TB, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	return team(p.Namespace, 0).CreateGated(ctx, t, p)
}

func deletePod(ctx context.Context, t testing.TB, ns, name string) {
	t.Helper()
	team(ns, 0).DeletePod(ctx, t, name)
}

func hasGate(p *corev1.Pod) bool { return bench.Gated(p) }

func isRunning(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

func reservations(ctx context.Context, t testing.TB, ns string) []corev1.Pod {
	t.Helper()
	return team(ns, 0).Reservations(ctx, t)
}

func sharePods(ctx context.Context, t testing.TB, ns string) []corev1.Pod {
	t.Helper()
	return team(ns, 0).SharePods(ctx, t)
}

func configMap(ctx context.Context, t testing.TB, p *corev1.Pod) *corev1.ConfigMap {
	t.Helper()
	cm, err := env.cp.Client.CoreV1().ConfigMaps(p.Namespace).Get(ctx, p.Annotations[contract.AnnotationShareConfigMap], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("share ConfigMap of %s: %v", p.Name, err)
	}
	return cm
}

// waitForEvent polls for an event with reason on the pod and returns its note.
func waitForEvent(ctx context.Context, t testing.TB, p *corev1.Pod, reason string) string {
	t.Helper()
	var note string
	poll.Until(ctx, t, 30*time.Second, fmt.Sprintf("event %s on %s", reason, p.Name), func(ctx context.Context) (bool, error) {
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

// checkInvariants asserts what must hold at any instant in a team namespace
// (bench.Team.CheckInvariants).
func checkInvariants(ctx context.Context, t testing.TB, ns string, maxPods int) {
	t.Helper()
	team(ns, maxPods).CheckInvariants(ctx, t)
}
