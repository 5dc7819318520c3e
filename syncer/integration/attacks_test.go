package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
)

// Layers: the webhook that stops an attack, as the API server names it in a
// refusal.
const (
	mutatingWebhook   = "pods.mutate.gpuvc.dev"
	validatingWebhook = "pods.validate.gpuvc.dev"
)

// attack is a tenant manifest (optionally followed by an update of the host pod)
// and how the named layer stops it: refused (the API error names the layer and
// the reason) or neutralised (check passes on the stored pod).
type attack struct {
	layer    string
	manifest *testobj.PodWrapper
	// then, if set, acts on the admitted host pod (an UPDATE or a subresource
	// write) and returns the API server's answer.
	then    func(ctx context.Context, s podSource, host *corev1.Pod) (*corev1.Pod, error)
	refused []string // words the refusal must contain, starting with "gpuvc: <Reason>"
	check   func(t *testing.T, p *corev1.Pod)
	// runs: the neutralised pod must also run, on a node of pool a100.
	runs bool
}

// follow runs the attack's then, if any, on the admitted host pod (pod, err:
// what creating the manifest returned) and returns the API server's answer.
func (a attack) follow(ctx context.Context, t *testing.T, src podSource, pod *corev1.Pod, err error) (*corev1.Pod, error) {
	t.Helper()
	if a.then == nil {
		return pod, err
	}
	if err != nil {
		t.Fatalf("the manifest before the attack was refused: %v", err)
	}
	return a.then(ctx, src, pod)
}

// verify checks that the attack was stopped by its layer: refused with its
// words, or admitted as a pod that passes check (and runs in pool a100).
func (a attack) verify(ctx context.Context, t *testing.T, src podSource, pod *corev1.Pod, err error) {
	t.Helper()
	if a.refused != nil {
		refusedBy(t, err, a.layer, a.refused...)
		return
	}
	if err != nil {
		t.Fatalf("want the attack neutralised by %s, got: %v", a.layer, err)
	}
	stored, err := src.Client().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.check(t, stored)
	if a.runs {
		if got := poll.Pod(ctx, t, env.cp.Client, pod.Namespace, pod.Name, running); !strings.HasPrefix(got.Spec.NodeName, "a100") {
			t.Errorf("ran on %s, outside pool a100", got.Spec.NodeName)
		}
	}
}

func refused(reason string, words ...string) []string {
	return append([]string{"gpuvc: " + reason + ":"}, words...)
}

func manifest(name string) *testobj.PodWrapper { return testobj.Pod(name, "default") }

func onlyPoolToleration(t *testing.T, p *corev1.Pod) {
	t.Helper()
	for _, tol := range p.Spec.Tolerations {
		if tol.Key == "" && tol.Operator == corev1.TolerationOpExists || tol.Key == contract.LabelPool && tol.Value != "a100" ||
			tol.Key == contract.LabelPool && tol.Operator == corev1.TolerationOpExists {
			t.Errorf("toleration %+v survived", tol)
		}
	}
	if p.Spec.NodeSelector[contract.LabelPool] != "a100" {
		t.Errorf("nodeSelector %v, want %s=a100", p.Spec.NodeSelector, contract.LabelPool)
	}
}

func noTolerationOf(key string) func(t *testing.T, p *corev1.Pod) {
	return func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		for _, tol := range p.Spec.Tolerations {
			if tol.Key == key {
				t.Errorf("toleration %+v survived", tol)
			}
		}
	}
}

func recorded(reason string) func(t *testing.T, p *corev1.Pod) {
	return func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		if !slices.Contains(decisionReasons(t, p), reason) {
			t.Errorf("decisions %v lack %s", decisionReasons(t, p), reason)
		}
	}
}

func all(checks ...func(t *testing.T, p *corev1.Pod)) func(t *testing.T, p *corev1.Pod) {
	return func(t *testing.T, p *corev1.Pod) {
		t.Helper()
		for _, c := range checks {
			c(t, p)
		}
	}
}

// update edits the latest host pod and writes it as vCluster would, retrying
// when the scheduler or kwok changed the pod in between.
func update(edit func(p *corev1.Pod)) func(ctx context.Context, s podSource, host *corev1.Pod) (*corev1.Pod, error) {
	return writeLatest(edit, podSource.Update)
}

func writeLatest(edit func(p *corev1.Pod), write func(podSource, context.Context, *corev1.Pod) (*corev1.Pod, error)) func(ctx context.Context, s podSource, host *corev1.Pod) (*corev1.Pod, error) {
	return func(ctx context.Context, s podSource, host *corev1.Pod) (out *corev1.Pod, err error) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := s.Client().CoreV1().Pods(host.Namespace).Get(ctx, host.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			edit(p)
			out, err = write(s, ctx, p)
			return err
		})
		return out, err
	}
}

func attacks() map[string]attack {
	h100 := corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule}
	m := map[string]attack{
		// Placement: reach another pool's GPUs.
		"foreign pool toleration and selector": {layer: mutatingWebhook, manifest: manifest("a1").GPUs("1").InPool("h100"),
			check: all(onlyPoolToleration, recorded(syncer.ReasonTolerationRemoved), recorded(syncer.ReasonPoolSelectorReplaced)), runs: true},
		"wildcard toleration (operator Exists)": {layer: mutatingWebhook, manifest: manifest("a2").TolerateEverything(),
			check: all(onlyPoolToleration, recorded(syncer.ReasonTolerationRemoved)), runs: true},
		"pool key toleration with Exists": {layer: mutatingWebhook,
			manifest: manifest("a3").Toleration(corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpExists}),
			check:    all(onlyPoolToleration, recorded(syncer.ReasonTolerationRemoved))},
		"nodeSelector to another pool": {layer: mutatingWebhook, manifest: manifest("a4").GPUs("1").NodeSelector(contract.LabelPool, "h100"),
			check: all(onlyPoolToleration, recorded(syncer.ReasonPoolSelectorReplaced)), runs: true},
		// Issue 22: tolerations of taints the platform keeps pods off with.
		"toleration of the GPU health taint": {layer: mutatingWebhook, manifest: manifest("e1").GPUs("1").
			Toleration(corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
			check: all(noTolerationOf(contract.TaintGPUUnhealthy), recorded(syncer.ReasonTolerationRemoved)), runs: true},
		"toleration of a cordoned node": {layer: mutatingWebhook, manifest: manifest("e2").
			Toleration(corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}),
			check: all(noTolerationOf(corev1.TaintNodeUnschedulable), recorded(syncer.ReasonTolerationRemoved)), runs: true},
		"Kueue priority class label": {layer: mutatingWebhook, manifest: manifest("e3").GPUs("1").Label(contract.LabelKueuePriorityClass, "cluster-critical"),
			check: all(func(t *testing.T, p *corev1.Pod) {
				if v, ok := p.Labels[contract.LabelKueuePriorityClass]; ok {
					t.Errorf("label %s=%s stored", contract.LabelKueuePriorityClass, v)
				}
			}, recorded(syncer.ReasonKueuePriorityRemoved)), runs: true},
		"gpuvc's share gate without a share": {layer: mutatingWebhook, manifest: manifest("e4").SchedulingGate(contract.GateGPUShare),
			check: all(func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.SchedulingGates) > 0 {
					t.Errorf("gates %v stored", p.Spec.SchedulingGates)
				}
			}, recorded(syncer.ReasonGateRemoved)), runs: true},
		"nodeName h100-0": {layer: mutatingWebhook, manifest: manifest("a5").GPUs("1").NodeName("h100-0"),
			refused: refused(syncer.ReasonNodeNameOutsidePool, "spec.nodeName=h100-0", "in pool h100", "remove spec.nodeName")},
		"node affinity to the h100 pool": {layer: mutatingWebhook, manifest: manifest("a6").GPUs("1").RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, "h100"),
			refused: refused(syncer.ReasonAffinityOutsidePool, "gpuvc.dev/pool In [h100]", "pool a100")},
		"node affinity to node h100-0": {layer: mutatingWebhook, manifest: manifest("a7").GPUs("1").RequireNodeNames("h100-0"),
			refused: refused(syncer.ReasonAffinityOutsidePool, "metadata.name In [h100-0]")},
		"foreign scheduler": {layer: mutatingWebhook, manifest: manifest("a8").SchedulerName("my-own-scheduler"),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Spec.SchedulerName != contract.DefaultSchedulerName {
					t.Errorf("schedulerName %s", p.Spec.SchedulerName)
				}
			}},
		"critical priority class": {layer: mutatingWebhook, manifest: manifest("a9").PriorityClass("system-node-critical"),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Spec.PriorityClassName != "" || ptr.Deref(p.Spec.Priority, 0) != 0 {
					t.Errorf("priority class %q priority %v kept", p.Spec.PriorityClassName, p.Spec.Priority)
				}
			}},

		// Node access.
		"privileged container": {layer: mutatingWebhook, manifest: manifest("b1").Privileged(),
			refused: refused(syncer.ReasonPrivileged, "spec.containers[0].securityContext.privileged=true")},
		"hostPath volume": {layer: mutatingWebhook, manifest: manifest("b2").HostPath("dev", "/dev"),
			refused: refused(syncer.ReasonHostPath, `hostPath "/dev"`)},
		"hostNetwork": {layer: mutatingWebhook, manifest: manifest("b3").HostNetwork(),
			refused: refused(syncer.ReasonHostNamespace, "spec.hostNetwork=true")},
		"hostPID": {layer: mutatingWebhook, manifest: manifest("b4").HostPID(),
			refused: refused(syncer.ReasonHostNamespace, "spec.hostPID=true")},
		"NVIDIA_VISIBLE_DEVICES=all": {layer: mutatingWebhook, manifest: manifest("b5").Env("NVIDIA_VISIBLE_DEVICES", "all"),
			refused: refused(syncer.ReasonGPUEnv, `env[NVIDIA_VISIBLE_DEVICES]="all"`)},
		"fractional pod raising its own GPU memory limit": {layer: mutatingWebhook, manifest: manifest("b5m").GPUFraction("0.5").Env("CUDA_DEVICE_MEMORY_LIMIT_0", "80g"),
			refused: refused(syncer.ReasonGPULimitEnv, `env[CUDA_DEVICE_MEMORY_LIMIT_0]="80g"`)},
		"another pod's share ConfigMap": {layer: mutatingWebhook, manifest: manifest("b6").EnvFromConfigMap("gpuvc-share-victim"),
			refused: refused(syncer.ReasonReservedConfigMap, "gpuvc-share-victim")},
		"privileged debug container": {layer: validatingWebhook, manifest: manifest("b7"),
			then: writeLatest(func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name: "debug", Image: "registry.invalid/debug", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				}})
			}, podSource.UpdateEphemeralContainers),
			refused: refused(syncer.ReasonPrivileged, "spec.ephemeralContainers[0].securityContext.privileged=true")},

		// Pod Security baseline, in a namespace labelled podSecurity: privileged.
		"podSecurity privileged team: capabilities.add SYS_ADMIN": {layer: mutatingWebhook, manifest: manifest("g1").AddCapabilities("SYS_ADMIN"),
			refused: refused(syncer.ReasonCapabilityNotAllowed, "spec.containers[0].securityContext.capabilities.add[0]=SYS_ADMIN", "Pod Security baseline set")},
		"seccomp Unconfined": {layer: mutatingWebhook, manifest: manifest("g2").PodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}), refused: refused(syncer.ReasonSeccompUnconfined, "spec.securityContext.seccompProfile.type=Unconfined")},
		"hostPort": {layer: mutatingWebhook, manifest: manifest("g3").HostPort(80, 80),
			refused: refused(syncer.ReasonHostPort, "spec.containers[0].ports[0].hostPort=80")},
		"unsafe sysctl": {layer: mutatingWebhook, manifest: manifest("g4").Sysctl("kernel.msgmax", "65536"),
			refused: refused(syncer.ReasonSysctlNotAllowed, "spec.securityContext.sysctls[0].name=kernel.msgmax")},
		"debug container adding SYS_ADMIN": {layer: validatingWebhook, manifest: manifest("g5"),
			then: writeLatest(func(p *corev1.Pod) {
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name: "debug", Image: "registry.invalid/debug",
					SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}},
				}})
			}, podSource.UpdateEphemeralContainers),
			refused: refused(syncer.ReasonCapabilityNotAllowed, "spec.ephemeralContainers[0].securityContext.capabilities.add[0]=SYS_ADMIN")},

		// Devices.
		"huge GPU count": {layer: mutatingWebhook, manifest: manifest("c1").GPUs("64"),
			refused: refused(syncer.ReasonGPUCountAboveLimit, "requests 64 GPU device(s)", "at most 4", "MaxGPUsPerPod=4")},
		"half a GPU as a resource": {layer: mutatingWebhook, manifest: manifest("c2").Limit(contract.ResourceGPU, "500m"),
			refused: refused(syncer.ReasonNonIntegerGPU, "nvidia.com/gpu]=500m", "gpu-fraction")},
		"time-sliced resource": {layer: mutatingWebhook, manifest: manifest("c3").Limit("nvidia.com/gpu.shared", "1"),
			refused: refused(syncer.ReasonUnsupportedGPUResource, "nvidia.com/gpu.shared")},
		"MIG profile not allowed": {layer: mutatingWebhook, manifest: manifest("c4").MIG("3g.40gb", "1"),
			refused: refused(syncer.ReasonMIGProfileNotAllowed, "3g.40gb", "allowed: 1g.10gb, 2g.20gb")},
		"MIG profile too large to map": {layer: mutatingWebhook, manifest: manifest("c5").MIG("7g.94gb", "1"),
			refused: refused(syncer.ReasonMIGProfileNotAllowed, "7g.94gb", "no allowed profile at least as large")},
		"gpu-fraction with nvidia.com/gpu": {layer: mutatingWebhook, manifest: manifest("c6").GPUFraction("0.5").GPUs("1"),
			refused: refused(syncer.ReasonShareWithGPUResource, "limits[nvidia.com/gpu]=1", "not both")},
		"DRA resource claim": {layer: mutatingWebhook, manifest: manifest("c8").ResourceClaim("gpu", "any-gpu"),
			refused: refused(syncer.ReasonResourceClaim, "spec.resourceClaims [gpu]", "outside team fraud's GPU quota")},
		"gpu-memory beyond one GPU": {layer: mutatingWebhook, manifest: manifest("c7").GPUMemory("90000"),
			refused: refused(syncer.ReasonInvalidGPUShare, `[gpu-memory]="90000"`, "81920 MiB")},

		// Forgery.
		"forged share labels": {layer: mutatingWebhook,
			manifest: manifest("d1").Label(contract.LabelGPUShare, "true").Annotation(contract.AnnotationShareConfigMap, "gpuvc-share-victim").
				Annotation(contract.AnnotationGPUFraction, "0.5"),
			check: all(recorded(syncer.ReasonReservedMetadataRemoved), func(t *testing.T, p *corev1.Pod) {
				if p.Labels[contract.LabelGPUShare] != "" || p.Annotations[contract.AnnotationShareConfigMap] != "" || hasGate(p) {
					t.Errorf("forged share kept: labels %v annotations %v gates %v", p.Labels, p.Annotations, p.Spec.SchedulingGates)
				}
			})},
		"forged reservation holding another GPU's UUID": {layer: mutatingWebhook,
			manifest: manifest("d3").GPUs("1").Label(contract.LabelRole, contract.RoleReservation).Label(contract.LabelShareGroup, "victim-res").
				Annotation(contract.AnnotationGPUUUID, "GPU-victim").Annotation(contract.AnnotationShareUnits, "10000"),
			check: all(recorded(syncer.ReasonReservedMetadataRemoved), func(t *testing.T, p *corev1.Pod) {
				for _, k := range []string{contract.LabelRole, contract.LabelShareGroup} {
					if v, ok := p.Labels[k]; ok {
						t.Errorf("forged label %s=%s kept", k, v)
					}
				}
				for _, k := range []string{contract.AnnotationGPUUUID, contract.AnnotationShareUnits} {
					if v, ok := p.Annotations[k]; ok {
						t.Errorf("forged annotation %s=%s kept", k, v)
					}
				}
			})},
		"fake control-plane pod": {layer: mutatingWebhook,
			manifest: manifest("d2").Label("app", "vcluster").Label("release", "fraud").Annotation(contract.AnnotationRole, contract.RoleControlPlane).
				OwnedBy("apps/v1", "StatefulSet", "fraud", "4a4a4a4a-0000-0000-0000-000000000000"),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Annotations[contract.AnnotationRole] != contract.RoleWorkload || p.Spec.NodeSelector[contract.LabelPool] != "a100" {
					t.Errorf("admitted as %s in pool %s, want a workload in a100", p.Annotations[contract.AnnotationRole], p.Spec.NodeSelector[contract.LabelPool])
				}
			}},

		// Updates undoing the fence.
		"update removing the share gate": {layer: mutatingWebhook, manifest: manifest("e1").GPUFraction("0.5"),
			then: update(func(p *corev1.Pod) { p.Spec.SchedulingGates = nil; p.Labels["app"] = "v2" }),
			check: func(t *testing.T, p *corev1.Pod) {
				if !hasGate(p) || p.Labels["app"] != "v2" {
					t.Errorf("gates %v labels %v: want the gate kept and the label change applied", p.Spec.SchedulingGates, p.Labels)
				}
			}},
		"update adding a foreign toleration": {layer: mutatingWebhook, manifest: manifest("e2"),
			then:  update(func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, h100) }),
			check: onlyPoolToleration},
		"update forging the share annotations": {layer: mutatingWebhook, manifest: manifest("e3").GPUFraction("0.25"),
			then: update(func(p *corev1.Pod) { p.Annotations[contract.AnnotationGPUFraction] = "0.99" }),
			check: func(t *testing.T, p *corev1.Pod) {
				if got := p.Annotations[contract.AnnotationGPUFraction]; got != "0.25" {
					t.Errorf("%s=%s, want 0.25", contract.AnnotationGPUFraction, got)
				}
			}},

		// Another mutating webhook undoing the fence after ours.
		"later webhook adds a foreign toleration": {layer: validatingWebhook, manifest: manifest("f1").Label("test.gpuvc.dev/evil", "true"),
			refused: refused(syncer.ReasonNotAsAdmitted, syncer.ReasonTolerationRemoved, "gpuvc.dev/pool Equal h100:NoSchedule")},
	}
	for _, f := range []string{"1.0", "-0.5", "NaN", "abc", "Inf", "0"} {
		m["gpu-fraction "+f] = attack{layer: mutatingWebhook, manifest: manifest("fraction-" + strings.ToLower(strings.NewReplacer(".", "-", "-", "m").Replace(f))).GPUFraction(f),
			refused: refused(syncer.ReasonInvalidGPUShare, fmt.Sprintf("[gpu-fraction]=%q", f), "greater than 0 and less than 1")}
	}
	return m
}

// TestAttacks runs every tenant attack through the real API server.
func TestAttacks(t *testing.T) {
	localcp.ForTest(t)
	registerEvilWebhook(t)
	for name, a := range attacks() {
		t.Run(name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			src := env.sources["fraud"]
			pod, err := create(ctx, t, "fraud", a.manifest.Obj())
			pod, err = a.follow(ctx, t, src, pod, err)
			a.verify(ctx, t, src, pod, err)
		})
	}
}

// registerEvilWebhook registers a mutating webhook that runs after gpuvc's (names
// sort after "gpuvc-syncer") and re-adds an h100 toleration to labelled pods,
// and waits until the API server calls it.
func registerEvilWebhook(t *testing.T) {
	t.Helper()
	ctx := poll.TestContext(t)
	mutating, _ := syncer.Configurations(syncer.ConfigOptions{Name: "zz-test-evil", URL: env.baseURL, CABundle: env.ca})
	wh := &mutating.Webhooks[0]
	wh.Name = "evil.test.gpuvc.dev"
	wh.ClientConfig.URL = ptr.To(env.baseURL + evilPath)
	wh.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"test.gpuvc.dev/evil": "true"}}
	c := env.cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := c.Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), mutating.Name, metav1.DeleteOptions{}) })
	probe := manifest("evil-probe").Label("test.gpuvc.dev/evil", "true").Obj()
	probe.Namespace = "team-fraud"
	waitUntil(ctx, t, "the evil webhook is called", func(ctx context.Context) bool {
		_, err := env.cp.Client.CoreV1().Pods("team-fraud").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), syncer.ReasonNotAsAdmitted)
	})
}
