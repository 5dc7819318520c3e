package integration

import (
	"errors"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/e2e/testsupport/vcsync"
)

// Tenant pods through vCluster's own translation (vcsync): what a team writes in
// its virtual cluster, the host pod vCluster v0.36.1 creates from it, that pod
// through gpuvc's webhooks on the real API server, and the scheduler's decision.

// vclusterMetadataKept checks that every label and annotation vCluster wrote is
// on the stored pod as vCluster wrote it, except gpuvc's own keys.
func vclusterMetadataKept(t *testing.T, sent, stored *corev1.Pod) {
	t.Helper()
	for _, m := range []struct {
		kind         string
		sent, stored map[string]string
	}{{"label", sent.Labels, stored.Labels}, {"annotation", sent.Annotations, stored.Annotations}} {
		for k, v := range m.sent {
			if strings.HasPrefix(k, contract.ReservedPrefix) {
				continue
			}
			if got, ok := m.stored[k]; !ok || got != v {
				t.Errorf("%s %s=%q written by vCluster is %q on the host", m.kind, k, v, got)
			}
		}
	}
}

func TestVClusterPodsRunInPool(t *testing.T) {
	localcp.ForTest(t)
	cases := []struct {
		team     string
		manifest *testobj.PodWrapper
		node     string // node it must run on; "" = gated, not scheduled
		limits   map[string]int64
	}{
		{team: "fraud", manifest: testobj.Pod("vc-trainer", "default").GPUs("1"), node: "a100-0", limits: map[string]int64{contract.ResourceGPU: 1}},
		{team: "fraud", manifest: testobj.Pod("vc-notebook", "default").MIG("1g.10gb", "1"), node: "a100-mig-0", limits: map[string]int64{"nvidia.com/mig-1g.10gb": 1}},
		// An H100 NVL profile: mapped to the smallest allowed profile with the memory.
		{team: "fraud", manifest: testobj.Pod("vc-nvl", "default").MIG("1g.12gb", "1"), node: "a100-mig-0", limits: map[string]int64{"nvidia.com/mig-2g.20gb": 1}},
		// Team ml's policy maps whole GPUs to MIG 1g.10gb.
		{team: "ml", manifest: testobj.Pod("vc-small", "default").GPUs("1"), node: "a100-mig-0", limits: map[string]int64{"nvidia.com/mig-1g.10gb": 1}},
		{team: "fraud", manifest: testobj.Pod("vc-half", "default").GPUFraction("0.5"), limits: map[string]int64{}},
		{team: "fraud", manifest: testobj.Pod("vc-mem", "default").GPUMemory("20000"), limits: map[string]int64{}},
	}
	for _, c := range cases {
		t.Run(c.team+"/"+c.manifest.Name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			src := newVClusterSource(t, c.team, gpuvcValues)
			pod, err := createVia(ctx, t, src, c.manifest.Obj())
			if err != nil {
				t.Fatal(err)
			}
			sent := src.last.Created()
			if want := vcsync.HostName(src.vc, c.manifest.Name, "default"); pod.Name != want || sent.Name != want {
				t.Errorf("host pod %s (vCluster sent %s), want vCluster's name %s", pod.Name, sent.Name, want)
			}
			vclusterMetadataKept(t, sent, pod)
			if pod.Labels[contract.LabelTeam] != c.team || pod.Spec.NodeSelector[contract.LabelPool] != "a100" {
				t.Errorf("labels %v nodeSelector %v: want team %s in pool a100", pod.Labels, pod.Spec.NodeSelector, c.team)
			}
			got := map[string]int64{}
			for name, q := range pod.Spec.Containers[0].Resources.Limits {
				if strings.HasPrefix(string(name), "nvidia.com/") {
					got[string(name)] = q.Value()
				}
			}
			if !maps.Equal(got, c.limits) {
				t.Errorf("GPU limits %v, want %v", got, c.limits)
			}
			if c.node == "" {
				cm := pod.Annotations[contract.AnnotationShareConfigMap]
				if !hasGate(pod) || cm == "" || len(pod.Spec.Containers[0].EnvFrom) == 0 || pod.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name != cm {
					t.Errorf("share pod: gates %v, ConfigMap %q, envFrom %+v", pod.Spec.SchedulingGates, cm, pod.Spec.Containers[0].EnvFrom)
				}
				if p := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, schedulingGated); p.Spec.NodeName != "" {
					t.Errorf("gated pod bound to %s", p.Spec.NodeName)
				}
				return
			}
			if p := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running); p.Spec.NodeName != c.node {
				t.Errorf("ran on %s, want %s", p.Spec.NodeName, c.node)
			}
		})
	}
}

// TestVClusterAttacks runs the attack table through vCluster's translation with
// the chart's defaults (nothing fenced by vCluster): the webhook alone must stop
// every attack, with the same layer and reason as for directly written pods.
func TestVClusterAttacks(t *testing.T) {
	localcp.ForTest(t)
	registerEvilWebhook(t)
	for name, a := range attacks() {
		t.Run(name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			src := newVClusterSource(t, "fraud", chartDefaults)
			pod, err := createVia(ctx, t, src, a.manifest.Obj())
			pod, err = a.follow(ctx, t, src, pod, err)
			var virtualRefused *errVirtualRefused
			if a.refused != nil && errors.As(err, &virtualRefused) {
				t.Logf("stopped earlier, by the virtual API server: %v", err)
				return
			}
			a.verify(ctx, t, src, pod, err)
		})
	}
}

// With gpuvc's values vCluster already pins pods to the pool and shows only the
// pool's nodes: a pod naming another node is not synced at all, and a tenant's
// toleration for another pool still reaches the host, where the webhook removes it.
func TestVClusterWithGpuvcValues(t *testing.T) {
	localcp.ForTest(t)
	t.Run("nodeName outside the pool", func(t *testing.T) {
		ctx := poll.TestContext(t)
		src := newVClusterSource(t, "fraud", gpuvcValues)
		_, err := createVia(ctx, t, src, testobj.Pod("vc-pinned", "default").GPUs("1").NodeName("h100-0").Obj())
		var notSynced *errNotSynced
		if !errors.As(err, &notSynced) || !notSynced.requeue {
			t.Fatalf("got %v, want vCluster to wait for node h100-0 (not in the virtual cluster)", err)
		}
	})
	t.Run("foreign toleration and selector", func(t *testing.T) {
		ctx := poll.TestContext(t)
		src := newVClusterSource(t, "fraud", gpuvcValues)
		pod, err := createVia(ctx, t, src, testobj.Pod("vc-escape", "default").GPUs("1").InPool("h100").Obj())
		if err != nil {
			t.Fatal(err)
		}
		sent := src.last.Created()
		if sent.Spec.NodeSelector[contract.LabelPool] != "a100" {
			t.Errorf("vCluster sent nodeSelector %v, want its pool selector", sent.Spec.NodeSelector)
		}
		foreign := false
		for _, tol := range sent.Spec.Tolerations {
			foreign = foreign || tol.Key == contract.LabelPool && tol.Value == "h100"
		}
		if !foreign {
			t.Errorf("vCluster sent tolerations %v: expected the tenant's h100 toleration to pass through", sent.Spec.Tolerations)
		}
		onlyPoolToleration(t, pod)
		if got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running); got.Spec.NodeName != "a100-0" {
			t.Errorf("ran on %s, want a100-0", got.Spec.NodeName)
		}
	})
}

// A virtual ConfigMap named gpuvc-share-<pod> lands on the host under exactly
// the name of that pod's share ConfigMap (vCluster's ConfigMap and pod names
// share one scheme), and the pod may reference it as its own. What keeps a
// tenant from choosing its GPU is the share controller, which refuses a share
// ConfigMap synced by vCluster (syncer/share/bind.go, foreign).
func TestVClusterShareConfigMapNameCollides(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	src := newVClusterSource(t, "fraud", gpuvcValues)
	pod, err := createVia(ctx, t, src, testobj.Pod("vc-victim", "default").GPUFraction("0.5").EnvFromConfigMap("gpuvc-share-vc-victim").Obj())
	if err != nil {
		t.Fatalf("the webhook refused the pod's reference to its own share name: %v", err)
	}
	tenantConfigMap := vcsync.HostName(src.vc, "gpuvc-share-vc-victim", "default")
	if got := pod.Annotations[contract.AnnotationShareConfigMap]; got != tenantConfigMap {
		t.Errorf("share ConfigMap %s, tenant's ConfigMap on the host %s: no collision", got, tenantConfigMap)
	}
	if ref := pod.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name; ref != tenantConfigMap {
		t.Errorf("envFrom %s", ref)
	}
}
