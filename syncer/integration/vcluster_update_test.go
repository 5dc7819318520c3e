package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/e2e/testsupport/vcsync"
	"github.com/gpuvc/gpuvc/syncer"
)

// vCluster keeps syncing a pod after creating it: every host or virtual change
// runs its update path (pods syncer Sync → translate.Diff). These tests run that
// path with vcsync against the real API server, as vCluster's identity, so
// gpuvc's webhook handles vCluster's UPDATEs.

// syncRound is one run of vCluster's update path.
type syncRound struct {
	res *vcsync.Result
	// sent and stored are the host update vCluster sent and the pod the API
	// server stored (nil if vCluster sent none).
	sent, stored *corev1.Pod
	// changed says the API server stored a different pod (a new resourceVersion).
	changed bool
	// describe says what the update changed (describeRound).
	describe string
}

// pairState is what vCluster knows about a pod pair between syncs.
type pairState struct {
	virtualOld, virtual, hostOld *corev1.Pod
}

// syncUntilQuiet runs vCluster's update path until it sends nothing or sends an
// update the API server stores unchanged, at most max rounds, and returns them.
func syncUntilQuiet(ctx context.Context, t *testing.T, src *vclusterSource, st pairState, hostName string, max int) ([]syncRound, pairState) {
	t.Helper()
	var rounds []syncRound
	for range max {
		var r syncRound
		r, st = syncOnce(ctx, t, src, st, hostName)
		rounds = append(rounds, r)
		t.Logf("round %d: %s", len(rounds), r.describe)
		if r.res.Err != nil || r.sent == nil || !r.changed {
			return rounds, st
		}
	}
	t.Fatalf("vCluster's update path still changes the host pod after %d rounds", max)
	return nil, st
}

// syncOnce runs vCluster's update path once on the stored host pod. Between
// rounds vCluster's cache holds what it wrote or, when it wrote nothing, the
// objects it saw (the sync controller's updateObjectCache).
func syncOnce(ctx context.Context, t *testing.T, src *vclusterSource, st pairState, hostName string) (syncRound, pairState) {
	t.Helper()
	host, err := env.cp.Client.CoreV1().Pods(src.vc.HostNamespace).Get(ctx, hostName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := vcsync.Sync(t, src.vc, vcsync.Event{VirtualOld: st.virtualOld, Virtual: st.virtual, HostOld: st.hostOld, Host: host})
	r := syncRound{res: res}
	for _, w := range res.HostWrites("") {
		if w.Verb != "update" {
			continue
		}
		r.sent = w.Object.(*corev1.Pod)
		if w.Err != nil {
			t.Fatalf("the API server refused vCluster's update: %v", w.Err)
		}
		r.stored = w.Answer.(*corev1.Pod)
		r.changed = r.stored.ResourceVersion != host.ResourceVersion
	}
	r.describe = describeRound(host, r)
	st.hostOld = host
	if res.CachedHost != nil {
		st.hostOld = res.CachedHost
	}
	if v := res.LastVirtual(); v != nil {
		st.virtual = v
	}
	st.virtualOld = st.virtual
	return r, st
}

// created is the state right after vCluster created a pod: its cache holds the
// pod it sent (with the API server's resourceVersion and UID), the virtual pod
// unchanged since.
func created(t *testing.T, src *vclusterSource, virtual *corev1.Pod) pairState {
	t.Helper()
	if src.last.CachedHost == nil {
		t.Fatal("vCluster cached no host pod after creating it")
	}
	v, err := virtualPod(context.Background(), virtual)
	if err != nil {
		t.Fatal(err)
	}
	return pairState{virtualOld: v, virtual: v, hostOld: src.last.CachedHost}
}

// A share pod with a foreign toleration and a wildcard toleration: vCluster's
// update removes gpuvc's scheduling gate (it copies the virtual pod's gates) and
// re-adds the tolerations the webhook removed at creation; the webhook restores
// both on UPDATE. Node selector, env references and gpuvc's metadata are not
// touched by vCluster. The exchange settles: the last update vCluster sends is
// stored unchanged.
func TestVClusterUpdateKeepsGpuvcChanges(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	src := newVClusterSource(t, "fraud", gpuvcValues)
	manifest := testobj.Pod("vc-upd", "default").GPUFraction("0.5").InPool("h100").TolerateEverything().Obj()
	pod, err := createVia(ctx, t, src, manifest)
	if err != nil {
		t.Fatal(err)
	}
	if !hasGate(pod) {
		t.Fatalf("created without the share gate: %v", pod.Spec.SchedulingGates)
	}
	onlyPoolToleration(t, pod)

	rounds, st := syncUntilQuiet(ctx, t, src, created(t, src, manifest), pod.Name, 5)
	t.Logf("vCluster's update path: %d round(s) until quiet", len(rounds))
	first := rounds[0]
	if first.res.Err != nil || first.sent == nil {
		t.Fatalf("first sync: error %v, update sent %v", first.res.Err, first.sent != nil)
	}
	if hasGate(first.sent) {
		t.Errorf("vCluster's update kept the gate: the virtual pod has none, so vCluster removes it (expected)")
	}
	if !slices.ContainsFunc(first.sent.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == "" && tol.Operator == corev1.TolerationOpExists }) {
		t.Errorf("vCluster's update tolerations %v: expected the tenant's wildcard toleration back", first.sent.Spec.Tolerations)
	}
	if v := first.res.LastVirtual(); v == nil || v.Labels[contract.LabelTeam] != "fraud" {
		t.Errorf("the virtual pod vCluster wrote back lacks gpuvc's team label: %v", v)
	}

	stored, err := env.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasGate(stored) {
		t.Errorf("gate gone after vCluster's updates: %v", stored.Spec.SchedulingGates)
	}
	onlyPoolToleration(t, stored)
	if stored.Spec.NodeSelector[contract.LabelPool] != "a100" {
		t.Errorf("nodeSelector %v", stored.Spec.NodeSelector)
	}
	cm := pod.Annotations[contract.AnnotationShareConfigMap]
	if len(stored.Spec.Containers[0].EnvFrom) != 1 || stored.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name != cm {
		t.Errorf("envFrom %+v, want the share ConfigMap %s", stored.Spec.Containers[0].EnvFrom, cm)
	}
	for _, k := range []string{contract.AnnotationRole, contract.AnnotationGPUFraction, contract.AnnotationShareConfigMap} {
		if stored.Annotations[k] != pod.Annotations[k] {
			t.Errorf("annotation %s=%q, was %q", k, stored.Annotations[k], pod.Annotations[k])
		}
	}
	if stored.Labels[contract.LabelTeam] != "fraud" || stored.Labels[contract.LabelGPUShare] != "true" {
		t.Errorf("labels %v", stored.Labels)
	}
	waitForEvent(ctx, t, pod.Namespace, string(pod.UID), syncer.ReasonShareGateRestored)
	waitForEvent(ctx, t, pod.Namespace, string(pod.UID), syncer.ReasonTolerationRemoved)

	// The tenant edits the virtual pod's labels: drops the gpuvc label vCluster
	// copied into it and changes its own. vCluster sends both changes; the webhook
	// keeps gpuvc's label and lets the tenant's through.
	edited := st.virtual.DeepCopy()
	if edited.Labels == nil {
		edited.Labels = map[string]string{}
	}
	delete(edited.Labels, contract.LabelTeam)
	edited.Labels["app"] = "v2"
	st.virtualOld, st.virtual = st.virtual, edited
	rounds, _ = syncUntilQuiet(ctx, t, src, st, pod.Name, 5)
	if sent := rounds[0].sent; sent == nil || sent.Labels["app"] != "v2" || sent.Labels[contract.LabelTeam] != "" {
		t.Errorf("vCluster's update after the virtual edit: %v; want app=v2 and no %s", sent, contract.LabelTeam)
	}
	stored, err = env.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Labels["app"] != "v2" || stored.Labels[contract.LabelTeam] != "fraud" || !hasGate(stored) {
		t.Errorf("after the virtual edit: labels %v gates %v; want app=v2, gpuvc's team label, the gate", stored.Labels, stored.Spec.SchedulingGates)
	}
	waitForEvent(ctx, t, pod.Namespace, string(pod.UID), syncer.ReasonReservedMetadataRestored)
	if p := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, schedulingGated); p.Spec.NodeName != "" {
		t.Errorf("bound to %s while gated", p.Spec.NodeName)
	}
}

// A pod whose GPU request gpuvc mapped (team ml: whole GPU → MIG 1g.10gb): on
// Kubernetes 1.35+ vCluster's update path first resizes the host containers to
// the virtual pod's resources. Without gpuvc the API server refuses that resize
// (only cpu and memory are resizable) and vCluster's sync stops before its diff,
// so the pod's status never reaches the tenant; the webhook keeps GPU resources
// as admitted on pods/resize, so the mapping holds and status syncs. An unmapped
// pod (team fraud, whole GPU) syncs as before.
func TestVClusterUpdateOfMappedPod(t *testing.T) {
	localcp.ForTest(t)
	for _, c := range []struct {
		team     string
		manifest *corev1.Pod
		mapped   bool
	}{
		{team: "ml", manifest: testobj.Pod("vc-mapped", "default").GPUs("1").Obj(), mapped: true},
		{team: "fraud", manifest: testobj.Pod("vc-unmapped", "default").GPUs("1").Obj()},
	} {
		t.Run(c.team+"/"+c.manifest.Name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			src := newVClusterSource(t, c.team, gpuvcValues)
			pod, err := createVia(ctx, t, src, c.manifest)
			if err != nil {
				t.Fatal(err)
			}
			run := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running)
			// A real kubelet reports each running container's resources, and the API
			// server allows a resize only then; kwok does not, so report them as a
			// kubelet would.
			for i := range run.Status.ContainerStatuses {
				run.Status.ContainerStatuses[i].Resources = run.Spec.Containers[i].Resources.DeepCopy()
			}
			if run, err = env.cp.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, run, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			st := created(t, src, c.manifest)
			// vCluster bound the virtual pod to the host pod's node in an earlier sync.
			st.virtual.Spec.NodeName = run.Spec.NodeName
			st.virtualOld = st.virtual

			res := vcsync.Sync(t, src.vc, vcsync.Event{VirtualOld: st.virtualOld, Virtual: st.virtual, HostOld: st.hostOld, Host: run})
			resize := res.HostWrites("resize")
			after, err := env.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(slices.Sorted(maps.Keys(run.Spec.Containers[0].Resources.Limits)), slices.Sorted(maps.Keys(after.Spec.Containers[0].Resources.Limits))) {
				t.Errorf("host limits changed by vCluster: %v → %v", run.Spec.Containers[0].Resources.Limits, after.Spec.Containers[0].Resources.Limits)
			}
			if !c.mapped {
				if len(resize) != 0 || res.Err != nil {
					t.Fatalf("unmapped pod: resize writes %d, error %v", len(resize), res.Err)
				}
				if v := res.LastVirtual(); v == nil || v.Status.Phase != corev1.PodRunning {
					t.Errorf("virtual pod status not synced: %+v", v)
				}
				return
			}
			if len(resize) != 1 {
				t.Fatalf("mapped pod: %d resize writes, want 1 (host writes %+v)", len(resize), res.Host)
			}
			t.Logf("vCluster's resize patch: %s; answer: %v", resize[0].Patch, resize[0].Err)
			// The webhook keeps GPU resources as admitted on pods/resize, so the API
			// server accepts vCluster's resize (cpu and memory only) and vCluster goes
			// on to sync the pod's status to the tenant.
			if resize[0].Err != nil {
				t.Fatalf("vCluster's resize of a mapped pod was refused: %v", resize[0].Err)
			}
			if res.Err != nil {
				// Its resize bumped the pod's resourceVersion under vCluster's next
				// write in the same sync: vCluster requeues on a conflict, and the next
				// sync, from the stored pod, must succeed.
				if !apierrors.IsConflict(errors.Unwrap(res.Err)) && !strings.Contains(res.Err.Error(), "the object has been modified") {
					t.Fatalf("vCluster's sync of a mapped pod failed: %v", res.Err)
				}
				latest, err := env.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				res = vcsync.Sync(t, src.vc, vcsync.Event{VirtualOld: st.virtualOld, Virtual: st.virtual, HostOld: latest, Host: latest})
				if res.Err != nil {
					t.Fatalf("vCluster's second sync of a mapped pod failed: %v", res.Err)
				}
			}
			if v := res.LastVirtual(); v == nil || v.Status.Phase != corev1.PodRunning {
				t.Errorf("virtual pod status not synced: %+v", v)
			}
		})
	}
}

// describeRound says which fields vCluster's update changed against the host pod
// it read, and whether the API server stored a change.
func describeRound(host *corev1.Pod, r syncRound) string {
	if r.res.Err != nil {
		return "error: " + r.res.Err.Error()
	}
	if r.sent == nil {
		return "no host update"
	}
	var fields []string
	for name, changed := range map[string]bool{
		"labels":          !maps.Equal(host.Labels, r.sent.Labels),
		"annotations":     !maps.Equal(host.Annotations, r.sent.Annotations),
		"schedulingGates": !slices.Equal(host.Spec.SchedulingGates, r.sent.Spec.SchedulingGates),
		"tolerations":     !slices.Equal(host.Spec.Tolerations, r.sent.Spec.Tolerations),
		"nodeSelector":    !maps.Equal(host.Spec.NodeSelector, r.sent.Spec.NodeSelector),
	} {
		if changed {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	return fmt.Sprintf("vCluster's update changes %v; stored changed: %v", fields, r.changed)
}
