package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
)

// Tenant manifests below are what a team writes in its virtual cluster: no
// tolerations, no node selectors, no knowledge of pools.

func TestWholeGPURunsOnA100(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	before := counter(env.metrics.Requests.WithLabelValues("fraud", "mutate", "create", "patched"))

	// A toleration of another pool: removed, with a Warning event.
	pod, err := create(ctx, t, "fraud", testobj.Pod("trainer", "default").GPUs("1").TolerateTaint(contract.LabelPool, "h100").Obj())
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeSelector[contract.LabelPool] != "a100" || pod.Labels[contract.LabelTeam] != "fraud" || pod.Annotations[contract.AnnotationRole] != contract.RoleWorkload {
		t.Errorf("host pod not pinned and labelled: nodeSelector=%v labels=%v annotations=%v", pod.Spec.NodeSelector, pod.Labels, pod.Annotations)
	}
	got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running)
	if got.Spec.NodeName != "a100-0" {
		t.Errorf("ran on %s, want a100-0 (the a100 node with whole GPUs)", got.Spec.NodeName)
	}
	// The event carries the pod's UID: kubectl describe and vCluster find it.
	ev := waitForEvent(ctx, t, pod.Namespace, string(pod.UID), syncer.ReasonTolerationRemoved)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s", ev.Type)
	}
	// Pool pinning, every pod's, is in the decisions annotation only: the
	// webhook sends its events in order, so a PoolPinned one would be there
	// before the Warning.
	if !strings.Contains(pod.Annotations[contract.AnnotationDecisions], syncer.ReasonPoolPinned) {
		t.Errorf("decisions annotation %q lacks %s", pod.Annotations[contract.AnnotationDecisions], syncer.ReasonPoolPinned)
	}
	pinned, err := env.cp.Client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)), fields.OneTermEqualSelector("reason", syncer.ReasonPoolPinned)).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pinned.Items) != 0 {
		t.Errorf("a routine %s event was sent: %s", syncer.ReasonPoolPinned, pinned.Items[0].Message)
	}
	if after := counter(env.metrics.Requests.WithLabelValues("fraud", "mutate", "create", "patched")); after <= before {
		t.Errorf("admission counter for team fraud did not move: %v → %v", before, after)
	}
}

func TestMIGRunsOnMIGNode(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	pod, err := create(ctx, t, "fraud", testobj.Pod("notebook", "default").MIG("1g.10gb", "1").Obj())
	if err != nil {
		t.Fatal(err)
	}
	if got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running); got.Spec.NodeName != "a100-mig-0" {
		t.Errorf("ran on %s, want a100-mig-0", got.Spec.NodeName)
	}
}

// An H100 NVL profile is mapped onto the A100-80GB profiles team fraud may use:
// 1g.12gb needs 12 GB, so the smallest allowed profile that has it is 2g.20gb
// (1g.10gb would give less memory than asked).
func TestForeignMIGProfileIsMapped(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	pod, err := create(ctx, t, "fraud", testobj.Pod("nvl-notebook", "default").MIG("1g.12gb", "1").Obj())
	if err != nil {
		t.Fatal(err)
	}
	limits := pod.Spec.Containers[0].Resources.Limits
	if q, ok := limits["nvidia.com/mig-2g.20gb"]; !ok || q.Value() != 1 || len(limits) != 1 {
		t.Errorf("limits %v, want only nvidia.com/mig-2g.20gb: 1", limits)
	}
	if got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running); got.Spec.NodeName != "a100-mig-0" {
		t.Errorf("ran on %s, want a100-mig-0", got.Spec.NodeName)
	}
	waitForEvent(ctx, t, pod.Namespace, string(pod.UID), syncer.ReasonMIGProfileMapped)
}

// Team ml's policy turns whole-GPU requests into MIG 1g.10gb instances.
func TestWholeGPUMappedToMIG(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	pod, err := create(ctx, t, "ml", testobj.Pod("small", "default").GPUs("1").Obj())
	if err != nil {
		t.Fatal(err)
	}
	limits := pod.Spec.Containers[0].Resources.Limits
	mig := limits["nvidia.com/mig-1g.10gb"]
	if _, whole := limits[contract.ResourceGPU]; whole || mig.Value() != 1 {
		t.Errorf("limits %v, want nvidia.com/mig-1g.10gb: 1 and no nvidia.com/gpu", limits)
	}
	if got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running); got.Spec.NodeName != "a100-mig-0" {
		t.Errorf("ran on %s, want a100-mig-0", got.Spec.NodeName)
	}
}

func TestFractionPodIsGated(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	pod, err := create(ctx, t, "fraud", testobj.Pod("half", "default").GPUFraction("0.5").Container("sidecar").Obj())
	if err != nil {
		t.Fatal(err)
	}
	cm := "gpuvc-share-" + pod.Name
	if !hasGate(pod) || hasGPUResources(pod) {
		t.Errorf("gates %v, GPU resources %v: want the share gate and no GPU request", pod.Spec.SchedulingGates, hasGPUResources(pod))
	}
	for _, c := range pod.Spec.Containers {
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef == nil || c.EnvFrom[0].ConfigMapRef.Name != cm {
			t.Errorf("container %s envFrom %+v, want ConfigMap %s", c.Name, c.EnvFrom, cm)
		}
	}
	want := map[string]string{contract.AnnotationGPUFraction: "0.5", contract.AnnotationShareConfigMap: cm}
	for k, v := range want {
		if pod.Annotations[k] != v {
			t.Errorf("annotation %s=%q, want %q", k, pod.Annotations[k], v)
		}
	}
	if pod.Labels[contract.LabelGPUShare] != "true" {
		t.Errorf("label %s=%q", contract.LabelGPUShare, pod.Labels[contract.LabelGPUShare])
	}
	got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, schedulingGated)
	if got.Spec.NodeName != "" {
		t.Errorf("gated pod was bound to %s", got.Spec.NodeName)
	}
	waitForEvent(ctx, t, pod.Namespace, string(pod.UID), syncer.ReasonGPUShareGated)
}

// TestShareControllerContract plays the future share controller with its
// identity: create the ConfigMap, pin the gated pod to a node of the pool, remove
// the gate. The webhook lets exactly this through and the pod runs there.
func TestShareControllerContract(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	pod, err := create(ctx, t, "fraud", testobj.Pod("shared", "default").GPUFraction("0.25").Obj())
	if err != nil {
		t.Fatal(err)
	}
	ns, cm := pod.Namespace, pod.Annotations[contract.AnnotationShareConfigMap]
	_, err = env.share.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: cm},
		Data:       map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-00000000-0000-0000-0000-000000000000", "GPU_PORTION": "0.25"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.cp.Client.CoreV1().ConfigMaps(ns).Delete(context.Background(), cm, metav1.DeleteOptions{})
	})
	pinned := pod.DeepCopy()
	pinned.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"a100-0"}}}}},
	}}}
	if pinned, err = env.share.CoreV1().Pods(ns).Update(ctx, pinned, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("pinning the gated pod: %v", err)
	}
	pinned.Spec.SchedulingGates = nil
	if _, err = env.share.CoreV1().Pods(ns).Update(ctx, pinned, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("removing the gate as the share controller: %v", err)
	}
	if got := poll.Pod(ctx, t, env.cp.Client, ns, pod.Name, running); got.Spec.NodeName != "a100-0" {
		t.Errorf("ran on %s, want a100-0", got.Spec.NodeName)
	}
}

// Pods outside team namespaces are not the webhook's business.
func TestNonTeamNamespaceUntouched(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	in := testobj.Pod("elsewhere", "plain").InPool("h100").GPUs("1").Obj()
	pod, err := env.cp.Client.CoreV1().Pods("plain").Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePod("plain", pod.Name) })
	for k := range pod.Labels {
		t.Errorf("label %s added", k)
	}
	for k := range pod.Annotations {
		t.Errorf("annotation %s added", k)
	}
	if got := poll.Pod(ctx, t, env.cp.Client, "plain", pod.Name, running); got.Spec.NodeName != "h100-0" {
		t.Errorf("ran on %s, want h100-0", got.Spec.NodeName)
	}
}

// The API server names generateName pods only after mutating admission, so the
// webhook cannot name their share ConfigMap: such pods are refused with a reason
// (vCluster always sends a name).
func TestFractionNeedsAName(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	p := testobj.Pod("", "team-fraud").GPUFraction("0.5").Obj()
	p.GenerateName = "gen-"
	_, err := env.sources["fraud"].Client().CoreV1().Pods("team-fraud").Create(ctx, p, metav1.CreateOptions{})
	refusedBy(t, err, mutatingWebhook, "gpuvc: "+syncer.ReasonShareNeedsName, "set a name")
}
