package share_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer/share"
)

func served(p *corev1.Pod) bool { return !hasGate(p) && isRunning(p) }

func sampleCount(t *testing.T, o prometheus.Observer) uint64 {
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// Three 0.3 pods share one reservation; a fourth needs a second. Every pod runs
// on its reservation's node with its GPU in its ConfigMap; when the pods go, the
// reservations and ConfigMaps go too.
func TestFractionsShareOneReservation(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	ns := newTeam(ctx, t, "pack", 4)

	var pods []*corev1.Pod
	for _, n := range []string{"a", "b", "c"} {
		createShare(ctx, t, ns, n, "0.3")
	}
	for _, n := range []string{"a", "b", "c"} {
		pods = append(pods, poll.Pod(ctx, t, env.cp.Client, ns, n, served))
	}
	res := reservations(ctx, t, ns)
	if len(res) != 1 {
		t.Fatalf("%d reservations for 3 x 0.3, want 1: %v", len(res), names(res))
	}
	r := res[0]
	uuid := r.Annotations[contract.AnnotationGPUUUID]
	if !strings.HasPrefix(uuid, "GPU-sim-a100-0-") || r.Spec.NodeName != "a100-0" {
		t.Errorf("reservation %s on %q holds %q, want a simulated GPU of a100-0", r.Name, r.Spec.NodeName, uuid)
	}
	if q := r.Spec.Containers[0].Resources.Limits[contract.ResourceGPU]; q.Value() != 1 || r.Labels[contract.LabelShareGroup] != r.Name {
		t.Errorf("reservation %s: limits %v, labels %v", r.Name, r.Spec.Containers[0].Resources.Limits, r.Labels)
	}
	for _, p := range pods {
		if p.Spec.NodeName != r.Spec.NodeName || p.Labels[contract.LabelShareGroup] != r.Name || p.Annotations[contract.AnnotationShareUnits] != "3000" {
			t.Errorf("pod %s on %s, group %q, units %q; want %s, %s, 3000", p.Name, p.Spec.NodeName,
				p.Labels[contract.LabelShareGroup], p.Annotations[contract.AnnotationShareUnits], r.Spec.NodeName, r.Name)
		}
		cm := configMap(ctx, t, p)
		want := map[string]string{contract.EnvVisibleDevices: uuid, contract.EnvGPUPortion: "0.3", contract.EnvGPUMemoryMiB: "24576", contract.EnvReservation: r.Name}
		for k, v := range want {
			if cm.Data[k] != v {
				t.Errorf("pod %s: ConfigMap %s[%s]=%q, want %q", p.Name, cm.Name, k, cm.Data[k], v)
			}
		}
		note := waitForEvent(ctx, t, p, share.ReasonBound)
		if !strings.Contains(note, uuid) || !strings.Contains(note, "a100-0") {
			t.Errorf("event %s on %s: %q does not name the GPU and node", share.ReasonBound, p.Name, note)
		}
	}

	createShare(ctx, t, ns, "d", "0.3")
	d := poll.Pod(ctx, t, env.cp.Client, ns, "d", served)
	if g := d.Labels[contract.LabelShareGroup]; g == "" || g == r.Name {
		t.Errorf("fourth pod in group %q, want a second reservation", g)
	}
	if n := len(reservations(ctx, t, ns)); n != 2 {
		t.Errorf("%d reservations for 4 x 0.3, want 2", n)
	}
	checkInvariants(ctx, t, ns, share.DefaultMaxPodsPerGPU)
	poll.Until(ctx, t, 10*time.Second, "metrics say 2 reservations, 1.2 GPU, none gated, 4 latencies", func(context.Context) (bool, error) {
		return testutil.ToFloat64(env.metrics.Reservations.WithLabelValues("pack")) == 2 &&
			testutil.ToFloat64(env.metrics.AllocatedGPUs.WithLabelValues("pack")) == 1.2 &&
			testutil.ToFloat64(env.metrics.GatedPods.WithLabelValues("pack")) == 0 &&
			sampleCount(t, env.metrics.UngateLatency.WithLabelValues("pack")) == 4, nil
	})

	// The pods go: so do the reservations (after the grace) and the ConfigMaps.
	for _, n := range []string{"a", "b", "c", "d"} {
		deletePod(ctx, t, ns, n)
	}
	poll.Until(ctx, t, time.Minute, "reservations and ConfigMaps are gone", func(ctx context.Context) (bool, error) {
		cms, err := env.cp.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelSharePod})
		if err != nil {
			return false, err
		}
		return len(reservations(ctx, t, ns)) == 0 && len(cms.Items) == 0, nil
	})
}

// gpu-memory is converted with the node's nvidia.com/gpu.memory label: 40960 MiB
// of an 81920 MiB A100 is half of it, so two such pods fill one GPU.
func TestMemoryShare(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	ns := newTeam(ctx, t, "memory", 2)

	createPod(ctx, t, testobj.Pod("m1", ns).GPUMemory("40960").Obj())
	m1 := poll.Pod(ctx, t, env.cp.Client, ns, "m1", served)
	if got := m1.Annotations[contract.AnnotationShareUnits]; got != "5000" {
		t.Errorf("units %q, want 5000 (0.5 of 81920 MiB)", got)
	}
	cm := configMap(ctx, t, m1)
	if cm.Data[contract.EnvGPUPortion] != "0.5" || cm.Data[contract.EnvGPUMemoryMiB] != "40960" {
		t.Errorf("ConfigMap %v, want %s=0.5 and %s=40960", cm.Data, contract.EnvGPUPortion, contract.EnvGPUMemoryMiB)
	}
	createPod(ctx, t, testobj.Pod("m2", ns).GPUMemory("40960").Obj())
	m2 := poll.Pod(ctx, t, env.cp.Client, ns, "m2", served)
	if m2.Labels[contract.LabelShareGroup] != m1.Labels[contract.LabelShareGroup] {
		t.Errorf("two halves on %q and %q, want one GPU", m1.Labels[contract.LabelShareGroup], m2.Labels[contract.LabelShareGroup])
	}
	createShare(ctx, t, ns, "f", "0.1")
	f := poll.Pod(ctx, t, env.cp.Client, ns, "f", served)
	if f.Labels[contract.LabelShareGroup] == m1.Labels[contract.LabelShareGroup] {
		t.Errorf("a full GPU took another share")
	}
	checkInvariants(ctx, t, ns, share.DefaultMaxPodsPerGPU)
}

// With a quota of one GPU, a pod that needs a second reservation stays gated
// with a Warning naming the quota and its numbers, and is served when room
// frees: by a larger quota, or by another pod leaving.
func TestQuotaKeepsPodGatedUntilRoomFrees(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	ns := newTeam(ctx, t, "quota", 1)

	createShare(ctx, t, ns, "first", "0.6")
	first := poll.Pod(ctx, t, env.cp.Client, ns, "first", served)
	second := createShare(ctx, t, ns, "second", "0.6")
	note := waitForEvent(ctx, t, second, share.ReasonQuotaExceeded)
	for _, want := range []string{"exceeded quota", "gpuvc-quota", "requests.nvidia.com/gpu=1", "gpu-fraction 0.6", "most free 0.4", "stays gated"} {
		if !strings.Contains(note, want) {
			t.Errorf("quota event %q does not mention %q", note, want)
		}
	}
	if p := poll.Pod(ctx, t, env.cp.Client, ns, "second", func(*corev1.Pod) bool { return true }); !hasGate(p) || len(reservations(ctx, t, ns)) != 1 {
		t.Fatalf("over quota: gated=%v, reservations %d; want gated and 1", hasGate(p), len(reservations(ctx, t, ns)))
	}

	// Room by quota: the ResourceQuota watch wakes the controller.
	q, err := env.cp.Client.CoreV1().ResourceQuotas(ns).Get(ctx, "gpuvc-quota", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard = testobj.Quota("", "", map[string]string{"requests.nvidia.com/gpu": "2"}).Spec.Hard
	if _, err := env.cp.Client.CoreV1().ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Pod(ctx, t, env.cp.Client, ns, "second", served)

	// Room by a pod leaving: the third reuses the first's GPU.
	third := createShare(ctx, t, ns, "third", "0.6")
	waitForEvent(ctx, t, third, share.ReasonQuotaExceeded)
	deletePod(ctx, t, ns, "first")
	got := poll.Pod(ctx, t, env.cp.Client, ns, "third", served)
	if got.Labels[contract.LabelShareGroup] != first.Labels[contract.LabelShareGroup] {
		t.Errorf("third pod on %q, want the first's reservation %q", got.Labels[contract.LabelShareGroup], first.Labels[contract.LabelShareGroup])
	}
	checkInvariants(ctx, t, ns, share.DefaultMaxPodsPerGPU)
}

// Team tight allows two pods per shared GPU: three small pods need two GPUs.
func TestMaxPodsPerGPU(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	ns := newTeam(ctx, t, "tight", 2)
	for _, n := range []string{"a", "b", "c"} {
		createShare(ctx, t, ns, n, "0.1")
	}
	groups := map[string]int{}
	for _, n := range []string{"a", "b", "c"} {
		groups[poll.Pod(ctx, t, env.cp.Client, ns, n, served).Labels[contract.LabelShareGroup]]++
	}
	if len(groups) != 2 {
		t.Errorf("pods per reservation %v, want 2 reservations (at most 2 pods each)", groups)
	}
	checkInvariants(ctx, t, ns, maxPodsPerGPU["tight"])
}

// Quota held by a whole-GPU pod of the team: its deletion wakes the controller
// and the gated share pod is served.
func TestWholeGPUPodLeavingFreesQuota(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	ns := newTeam(ctx, t, "whole", 1)
	whole, err := env.cp.Client.CoreV1().Pods(ns).Create(ctx, testobj.Pod("whole", ns).GPUs("1").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	poll.Pod(ctx, t, env.cp.Client, ns, whole.Name, isRunning)
	p := createShare(ctx, t, ns, "half", "0.5")
	note := waitForEvent(ctx, t, p, share.ReasonQuotaExceeded)
	if !strings.Contains(note, "the team holds no shared GPU") {
		t.Errorf("quota event %q does not say the team holds no shared GPU", note)
	}
	deletePod(ctx, t, ns, whole.Name)
	poll.Pod(ctx, t, env.cp.Client, ns, "half", served)
}

// The controller's pod patches carry the pod's UID: the API server applies one
// to the pod it was computed from and refuses it on a pod recreated under the
// same name.
func TestPatchesOnlyTheSamePod(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, time.Minute)
	ns := newTeam(ctx, t, "uid", 1)
	p := createShare(ctx, t, ns, "p", "0.5")
	for _, tc := range []struct {
		uid     types.UID
		applies bool
	}{{"0b0e5e5e-0000-4000-8000-000000000000", false}, {p.UID, true}} {
		orig := p.DeepCopy()
		orig.UID = tc.uid
		mod := orig.DeepCopy()
		mod.Annotations[contract.AnnotationGPUUUID] = "GPU-x"
		patch, err := share.UIDPatch(orig, mod)
		if err != nil {
			t.Fatal(err)
		}
		err = env.c.Patch(ctx, mod, patch)
		if (err == nil) != tc.applies {
			t.Errorf("patch with UID %s: err %v, want applied=%v", tc.uid, err, tc.applies)
		}
	}
}

// Pool system has no GPU: the first reservation is unschedulable, and the
// controller does not pile up more while it is; the pod that needs another GPU
// is told why.
func TestNoMoreReservationsWhileUnschedulable(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	ns := testobj.TeamNamespace("nogpu", "system")
	if _, err := env.cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := env.cp.WaitForServiceAccount(ctx, ns.Name, "default"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cleanTeam(t, ns.Name) })
	createShare(ctx, t, ns.Name, "first", "0.6")
	poll.Until(ctx, t, 30*time.Second, "the reservation is unschedulable", func(ctx context.Context) (bool, error) {
		for _, r := range reservations(ctx, t, ns.Name) {
			for _, c := range r.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
					return true, nil
				}
			}
		}
		return false, nil
	})
	second := createShare(ctx, t, ns.Name, "second", "0.6")
	note := waitForEvent(ctx, t, second, share.ReasonWaiting)
	if !strings.Contains(note, "unschedulable") || !strings.Contains(note, "pool system") {
		t.Errorf("event %q does not say the pool has no free GPU", note)
	}
	if n := len(reservations(ctx, t, ns.Name)); n != 1 {
		t.Errorf("%d reservations, want 1 while it is unschedulable", n)
	}
}

// A burst of 28 pods of 0.25 (Σ 7 GPUs), created by 8 clients at once while
// the controller places, creates reservations and binds in waves: every pod is
// served, no GPU holds more than 1.0 and the team holds exactly ceil(Σ) = 7
// reservations (quarters pack whole GPUs in any order, so an eighth would be a
// share placed twice or a reservation planned twice).
func TestBurstHoldsCeilOfTheSum(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	ns := newTeam(ctx, t, "burst", 8)

	names := make([]string, 28)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(names); i += 8 {
				names[i] = fmt.Sprintf("q-%d", i)
				createShare(ctx, t, ns, names[i], "0.25")
			}
		})
	}
	wg.Wait()
	for _, n := range names {
		if p := poll.Pod(ctx, t, env.cp.Client, ns, n, served); p.Annotations[contract.AnnotationShareUnits] != "2500" {
			t.Errorf("pod %s: units %q, want 2500", n, p.Annotations[contract.AnnotationShareUnits])
		}
	}
	checkInvariants(ctx, t, ns, share.DefaultMaxPodsPerGPU)
	perGPU := map[string]int{}
	for _, p := range sharePods(ctx, t, ns) {
		perGPU[p.Labels[contract.LabelShareGroup]]++
	}
	if res := reservations(ctx, t, ns); len(res) != 7 || len(perGPU) != 7 {
		t.Errorf("%d reservations (%d used) for 28 x 0.25, want ceil(Σ) = 7: pods per reservation %v", len(res), len(perGPU), perGPU)
	}
}
