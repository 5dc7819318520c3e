package celpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// tenantPod is a pod of team fraud that breaks no rule: it selects and
// tolerates pool a100, as the webhook would have made it. Attacks add one
// thing to it.
func tenantPod(name string) *testobj.PodWrapper { return testobj.Pod(name, teamNS).InPool(pool) }

// bare is a tenant pod as the tenant wrote it, before any webhook.
func bare(name string) *testobj.PodWrapper { return testobj.Pod(name, teamNS) }

// refusal is what a refused attack's error must contain besides the policy's
// name: the reason, then words naming the field, the value and the limit.
func refusal(reason string, words ...string) []string {
	return append([]string{"gpuvc: " + reason + ":"}, words...)
}

func attacks() map[string]struct {
	pod  *testobj.PodWrapper
	want []string
} {
	h100 := corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule}
	gpuLimit := "maxGPUsPerPod=2"
	type a = struct {
		pod  *testobj.PodWrapper
		want []string
	}
	m := map[string]a{
		// Placement: reach another pool's nodes.
		"foreign pool toleration": {tenantPod("tol-h100").GPUs("1").Toleration(h100),
			refusal(c.ReasonTolerationOutsidePool, "spec.tolerations [gpuvc.dev/pool Equal h100:NoSchedule]", "limit: gpuvc.dev/pool Equal a100:NoSchedule")},
		"wildcard toleration": {tenantPod("tol-wildcard").TolerateEverything(),
			refusal(c.ReasonTolerationOutsidePool, "[* Exists]", "remove them")},
		"pool key toleration with Exists": {tenantPod("tol-pool-exists").Toleration(corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpExists}),
			refusal(c.ReasonTolerationOutsidePool, "[gpuvc.dev/pool Exists]")},
		"nodeName h100-0": {tenantPod("nodename-h100").GPUs("1").NodeName("h100-0"),
			refusal(c.ReasonNodeNameSet, "spec.nodeName=h100-0", "no spec.nodeName at creation")},
		"nodeName a100-0 (own pool, still refused)": {tenantPod("nodename-a100").NodeName("a100-0"),
			refusal(c.ReasonNodeNameSet, "spec.nodeName=a100-0")},
		"nodeSelector pool h100": {bare("sel-h100").TolerateTaint(contract.LabelPool, pool).NodeSelector(contract.LabelPool, "h100").GPUs("1"),
			refusal(c.ReasonPoolNotSelected, "spec.nodeSelector[gpuvc.dev/pool]=h100", "team fraud must select pool a100", "limit: nodeSelector gpuvc.dev/pool=a100")},
		"no pool selector": {bare("sel-none").GPUs("1"),
			refusal(c.ReasonPoolNotSelected, "spec.nodeSelector[gpuvc.dev/pool]=(unset)", "must select pool a100")},

		// Node access.
		"privileged": {tenantPod("privileged").Privileged(),
			refusal(c.ReasonPrivileged, "spec.containers[0].securityContext.privileged=true", "limit: unprivileged containers only")},
		"privileged init container": {tenantPod("privileged-init").InitContainer("setup").PrivilegedOn("setup"),
			refusal(c.ReasonPrivileged, "spec.initContainers[0].securityContext.privileged=true")},
		"allowPrivilegeEscalation": {tenantPod("escalation").AllowPrivilegeEscalation(),
			refusal(c.ReasonPrivilegeEscalation, "spec.containers[0].securityContext.allowPrivilegeEscalation=true", "limit: allowPrivilegeEscalation false or unset")},
		"hostPath": {tenantPod("hostpath").HostPath("dev", "/dev"),
			refusal(c.ReasonHostPath, `spec.volumes[0] (dev) mounts hostPath "/dev"`, "limit: no hostPath volumes")},
		"init container with hostPath": {tenantPod("hostpath-init").InitContainer("setup").HostPathOn("setup", "root", "/"),
			refusal(c.ReasonHostPath, `spec.volumes[0] (root) mounts hostPath "/"`)},
		"hostNetwork": {tenantPod("hostnetwork").HostNetwork(), refusal(c.ReasonHostNamespace, "spec.hostNetwork=true", "limit: pods use their own network")},
		"hostPID":     {tenantPod("hostpid").HostPID(), refusal(c.ReasonHostNamespace, "spec.hostPID=true")},
		"hostIPC":     {tenantPod("hostipc").HostIPC(), refusal(c.ReasonHostNamespace, "spec.hostIPC=true")},
		"NVIDIA_VISIBLE_DEVICES=all": {tenantPod("visible-devices").Env("NVIDIA_VISIBLE_DEVICES", "all"),
			refusal(c.ReasonGPUEnv, `spec.containers[0].env[NVIDIA_VISIBLE_DEVICES="all"]`, "limit: GPUs come only from requests")},
		"another pod's share ConfigMap": {tenantPod("share-thief").EnvFromConfigMap("gpuvc-share-victim"),
			refusal(c.ReasonReservedConfigMap, "spec.containers[0] refers to ConfigMap gpuvc-share-victim", "limit: a pod reads only its own share")},

		// Devices.
		"3 GPUs in one container": {tenantPod("gpu-3").GPUs("3"),
			refusal(c.ReasonGPUCountAboveLimit, "requests 3 GPU device(s) (nvidia.com/gpu: 3", "team fraud allows at most 2", gpuLimit)},
		"2+2 GPUs across containers": {tenantPod("gpu-2-2").GPUs("2").Container("second").LimitOn("second", contract.ResourceGPU, "2"),
			refusal(c.ReasonGPUCountAboveLimit, "requests 4 GPU device(s) (nvidia.com/gpu: 4", gpuLimit)},
		"MIG over the max": {tenantPod("mig-3").MIG("1g.10gb", "3"),
			refusal(c.ReasonGPUCountAboveLimit, "requests 3 GPU device(s) (nvidia.com/mig-1g.10gb: 3", gpuLimit)},
		"whole GPU plus MIG over the max": {tenantPod("gpu-mig").GPUs("1").MIG("2g.20gb", "2"),
			refusal(c.ReasonGPUCountAboveLimit, "requests 3 GPU device(s)", "nvidia.com/gpu: 1", "nvidia.com/mig-2g.20gb: 2")},
		"sidecar GPU beside the main container's": {tenantPod("gpu-sidecar").GPUs("2").Sidecar("proxy").LimitOn("proxy", contract.ResourceGPU, "1"),
			refusal(c.ReasonGPUCountAboveLimit, "requests 3 GPU device(s)")},
		"init container over the max": {tenantPod("gpu-init").InitContainer("warmup").LimitOn("warmup", contract.ResourceGPU, "3"),
			refusal(c.ReasonGPUCountAboveLimit, "requests 3 GPU device(s)")},
		"time-sliced resource": {tenantPod("gpu-shared").Limit("nvidia.com/gpu.shared", "1"),
			refusal(c.ReasonUnsupportedGPUResource, "resources.limits[nvidia.com/gpu.shared]", "limit: nvidia.com/gpu, nvidia.com/mig-<profile>")},
		"gpu-memory not a number": {tenantPod("memory-lots").GPUMemory("lots"),
			refusal(c.ReasonInvalidGPUShare, `metadata.annotations[gpu-memory]="lots"`, "limit: a whole number of MiB greater than 0")},

		// Forgery: labels and owner references do not make a control plane.
		"fake control-plane pod asking for a GPU": {bare("fake-cp-gpu").InPool(systemPool).GPUs("1").
			Label("app", "vcluster").Label("release", team).Annotation(contract.AnnotationRole, contract.RoleControlPlane).
			OwnedBy("apps/v1", "StatefulSet", team, types.UID("4a4a4a4a-0000-0000-0000-000000000000")),
			refusal(c.ReasonPoolNotSelected, "spec.nodeSelector[gpuvc.dev/pool]=system", "must select pool a100")},
		"forged control-plane role annotation": {tenantPod("forged-role").Annotation(contract.AnnotationRole, contract.RoleControlPlane),
			refusal(c.ReasonForgedRole, `metadata.annotations[gpuvc.dev/role]="control-plane" on a pod that is not the vCluster control plane of team fraud`,
				"limit: gpuvc.dev/ keys are written by gpuvc only", "StatefulSet fraud")},
		"fake control-plane pod without GPU": {bare("fake-cp").InPool(systemPool).
			Label("app", "vcluster").Label("release", team).
			OwnedBy("apps/v1", "StatefulSet", team, types.UID("4a4a4a4a-0000-0000-0000-000000000000")),
			refusal(c.ReasonPoolNotSelected, "spec.nodeSelector[gpuvc.dev/pool]=system")},
	}
	for name, e := range escapeAttacks() {
		m[name] = e
	}
	for name, g := range gapAttacks() {
		m[name] = g
	}
	for name, b := range baselineAttacks() {
		m[name] = b
	}
	for _, f := range []string{"1.5", "-0.1", "abc", "0", "1.0", "1e-1", "NaN"} {
		name := "fraction-" + strings.ToLower(strings.NewReplacer(".", "-", "-", "m").Replace(f))
		m["gpu-fraction "+f] = a{tenantPod(name).GPUFraction(f),
			refusal(c.ReasonInvalidGPUShare, fmt.Sprintf("metadata.annotations[gpu-fraction]=%q", f), "limit: a decimal number greater than 0 and less than 1")}
	}
	return m
}

// TestAttacks sends every tenant attack through the real API server, as the
// team's vCluster syncer would, with no webhook: the CEL policy alone refuses
// each with the expected message.
func TestAttacks(t *testing.T) {
	localcp.ForTest(t)
	list := attacks()
	if len(list) < 15 {
		t.Fatalf("only %d attacks", len(list))
	}
	for name, a := range list {
		t.Run(name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			_, err := env.tenant.CoreV1().Pods(teamNS).Create(ctx, a.pod.Obj(), metav1.CreateOptions{})
			refusedByFence(t, err, a.want...)
		})
	}
}

// TestLegitimatePods: what teams normally run is admitted — and scheduled: the
// scheduler binds through pods/binding, which the fence does not judge.
func TestLegitimatePods(t *testing.T) {
	localcp.ForTest(t)
	for name, tc := range map[string]struct {
		client func() kubernetes.Interface
		pod    *testobj.PodWrapper
		node   string // where it must run; "" = only admitted
	}{
		"GPU pod in pool": {tenant, tenantPod("ok-gpu").GPUs("2"), "a100-0"},
		"CPU pod in pool": {tenant, tenantPod("ok-cpu"), "a100"},
		// A team's LimitRange defaults containers without a GPU limit to 0.
		"zero GPUs from a LimitRange default": {tenant, tenantPod("ok-zero").GPUs("0"), ""},
		"MIG pod within max":                  {tenant, tenantPod("ok-mig").MIG("1g.10gb", "2"), "a100-mig-0"},
		"init GPUs then main":                 {tenant, tenantPod("ok-init-gpu").GPUs("2").InitContainer("warmup").LimitOn("warmup", contract.ResourceGPU, "2"), "a100-0"},
		"sidecar plus main":                   {tenant, tenantPod("ok-sidecar").GPUs("1").Sidecar("proxy").LimitOn("proxy", contract.ResourceGPU, "1"), ""},
		"gpu-fraction 0.5":                    {tenant, tenantPod("ok-fraction").GPUFraction("0.5"), ""},
		"gpu-fraction .25":                    {tenant, tenantPod("ok-fraction-short").GPUFraction(".25"), ""},
		"gpu-memory 20000":                    {tenant, tenantPod("ok-memory").GPUMemory("20000"), ""},
		"own share ConfigMap":                 {tenant, tenantPod("ok-share").GPUFraction("0.5").EnvFromConfigMap("gpuvc-share-ok-share"), ""},
		"toleration the team allows":          {tenant, tenantPod("ok-tol").Toleration(teamToleration), ""},
		"explicitly unprivileged": {tenant, tenantPod("ok-unpriv").Edit(func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false)}
		}), ""},
		"non-team namespace with anything": {admin, testobj.Pod("anything", plainNS).Privileged().AllowPrivilegeEscalation().HostPath("dev", "/dev").
			HostNetwork().HostPID().HostIPC().TolerateEverything().NodeSelector(contract.LabelPool, "h100").NodeName("h100-0").GPUs("8").
			GPUFraction("abc").Env("NVIDIA_VISIBLE_DEVICES", "all"), "h100-0"},
	} {
		legitimate(t, name, tc.client, tc.pod, tc.node)
	}
	for name, pod := range gapLegitimate() {
		legitimate(t, name, tenant, pod, "")
	}
	for name, pod := range baselineLegitimate() {
		legitimate(t, name, tenant, pod, "")
	}
}

// legitimate creates pod as client and, when node is set, waits until it runs
// on a node whose name starts with node.
func legitimate(t *testing.T, name string, client func() kubernetes.Interface, pw *testobj.PodWrapper, node string) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		ctx := poll.TestContext(t)
		pod := pw.Obj()
		if _, err := client().CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("refused: %v", err)
		}
		deleteAtEnd(t, pod.Namespace, pod.Name)
		if node != "" {
			got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			if !strings.HasPrefix(got.Spec.NodeName, node) {
				t.Errorf("runs on %s, want %s", got.Spec.NodeName, node)
			}
		}
	})
}

func tenant() kubernetes.Interface { return env.tenant }
func admin() kubernetes.Interface  { return env.cp.Client }

// TestUpdates: an UPDATE is judged on what it changes — tolerations it adds,
// ephemeral containers it adds, the pool selector — so vCluster keeps syncing
// admitted pods while nothing can widen them.
func TestUpdates(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	pods := env.tenant.CoreV1().Pods(teamNS)
	if _, err := pods.Create(ctx, tenantPod("updated").GPUs("1").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, teamNS, "updated")
	edit := func(name string, change func(p *corev1.Pod), write func(context.Context, *corev1.Pod) error) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(p)
			return write(ctx, p)
		})
	}
	update := func(ctx context.Context, p *corev1.Pod) error {
		_, err := pods.Update(ctx, p, metav1.UpdateOptions{})
		return err
	}
	debug := func(ctx context.Context, p *corev1.Pod) error {
		_, err := pods.UpdateEphemeralContainers(ctx, p.Name, p, metav1.UpdateOptions{})
		return err
	}
	debugContainer := func(name string, privileged bool) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: name, Image: "registry.invalid/debug", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(privileged)},
			}})
		}
	}

	t.Run("label change (vCluster sync) is admitted", func(t *testing.T) {
		if err := edit("updated", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "v2"} }, update); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("adding a toleration for another pool is refused", func(t *testing.T) {
		err := edit("updated", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule})
		}, update)
		refusedByFence(t, err, refusal(c.ReasonTolerationOutsidePool, "[gpuvc.dev/pool Equal h100:NoSchedule]")...)
	})
	t.Run("adding a wildcard toleration is refused", func(t *testing.T) {
		err := edit("updated", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
		}, update)
		refusedByFence(t, err, refusal(c.ReasonTolerationOutsidePool, "[* Exists]")...)
	})
	t.Run("adding the GPU health taint's toleration is refused", func(t *testing.T) {
		err := edit("updated", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists})
		}, update)
		refusedByFence(t, err, refusal(c.ReasonTolerationOutsidePool, "[gpuvc.dev/gpu-unhealthy Exists]")...)
	})
	t.Run("adding a toleration the team allows is admitted", func(t *testing.T) {
		if err := edit("updated", func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, teamToleration)
		}, update); err != nil {
			t.Fatal(err)
		}
	})
	// Why NodeNameSet judges CREATE only: pod validation forbids setting
	// nodeName by UPDATE; the scheduler binds through pods/binding.
	t.Run("setting nodeName by update is invalid", func(t *testing.T) {
		err := edit("updated", func(p *corev1.Pod) { p.Spec.NodeName = "h100-0" }, update)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields") {
			t.Errorf("want the API server's validation to refuse it, got %v", err)
		}
	})
	t.Run("privileged debug container is refused", func(t *testing.T) {
		err := edit("updated", debugContainer("debug", true), debug)
		refusedByFence(t, err, refusal(c.ReasonPrivileged, "spec.ephemeralContainers[0].securityContext.privileged=true")...)
	})
	t.Run("plain debug container is admitted", func(t *testing.T) {
		if err := edit("updated", debugContainer("debug", false), debug); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("second, privileged debug container is refused", func(t *testing.T) {
		err := edit("updated", debugContainer("debug-2", true), debug)
		refusedByFence(t, err, refusal(c.ReasonPrivileged, "spec.ephemeralContainers[1].securityContext.privileged=true")...)
	})
	t.Run("debug container adding SYS_ADMIN is refused", func(t *testing.T) {
		err := edit("updated", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug-caps", Image: "registry.invalid/debug",
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}},
			}})
		}, debug)
		refusedByFence(t, err, refusal(c.ReasonCapabilityNotAllowed, "spec.ephemeralContainers[1].securityContext.capabilities.add[0]=SYS_ADMIN")...)
	})
}

// TestLowerLimitKeepsRunningPodsUpdatable: settings judged at creation are not
// judged again, so lowering a team's limit never blocks vCluster's updates or a
// controller removing its finalizer from a running pod.
func TestLowerLimitKeepsRunningPodsUpdatable(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const ns = "team-shrink"
	if err := createTeamNamespace(ctx, ns, "shrink", c.Params(pool, 2, systemPool, "shrink")); err != nil {
		t.Fatal(err)
	}
	pods := env.cp.Client.CoreV1().Pods(ns)
	pod := testobj.Pod("big", ns).InPool(pool).GPUs("2").Obj()
	pod.Finalizers = []string{"example.com/hold"}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, ns, pod.Name)
	if err := applyParams(ctx, ns, c.Params(pool, 1, systemPool, "shrink")); err != nil {
		t.Fatal(err)
	}
	// Wait until the fence judges with the new limit.
	probe := testobj.Pod("probe-two", ns).InPool(pool).GPUs("2").Obj()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := pods.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "maxGPUsPerPod=1"), nil
	})
	if err != nil {
		t.Fatalf("the fence never used maxGPUsPerPod=1: %v", err)
	}
	if _, err := pods.Patch(ctx, "big", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"v2"},"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("updating a pod admitted under the old limit: %v", err)
	}
}

// refusedByFence asserts that the pod fence, and nothing else, refused the
// request with every word given.
func refusedByFence(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want a refusal by %s containing %q", c.PolicyName, words)
	}
	if !apierrors.IsForbidden(err) {
		t.Fatalf("refused, but not as Forbidden: %v", err)
	}
	fenceMessage(t, err.Error(), words...)
}

// fenceMessage asserts that msg is the pod fence's refusal and contains every
// word given, starting with the reason.
func fenceMessage(t *testing.T, msg string, words ...string) {
	t.Helper()
	t.Logf("refusal: %s", msg)
	if !strings.Contains(msg, policyRefusal) {
		t.Fatalf("refused, but not by the policy %s: %s", c.PolicyName, msg)
	}
	if len(words) == 0 || !strings.HasPrefix(words[0], "gpuvc: ") {
		t.Fatalf("the test names no reason: %q", words)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal lacks %q", w)
		}
	}
}

// deleteAtEnd removes a pod the test created once the test ends, so the few
// simulated GPUs are free for the next test.
func deleteAtEnd(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		_ = env.cp.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
}
