package celpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/syncer"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
	"github.com/gpuvc/gpuvc/syncer/migmap"
	"github.com/gpuvc/gpuvc/syncer/syncertest"
)

// With both layers on, the webhook turns what tenants write into pods the CEL
// fence admits. The webhook is served here for one namespace only (label
// layeredLabel): every other test keeps running without any webhook.

const (
	layeredTeam  = "layered"
	layeredNS    = "team-" + layeredTeam
	layeredLabel = "celpolicy.test/webhook"
)

// layeredPolicy is the layered team's policy: the webhook's, and (with the
// pool and team its namespace's labels give the webhook) the fence's
// parameters.
var layeredPolicy = syncer.TeamPolicy{
	Team: layeredTeam, Pool: pool, SystemPool: systemPool,
	PoolGPUProduct: nodepool.ProductA100_80GB, PoolGPUMemoryMiB: 81920, MaxGPUsPerPod: maxGPUs,
	AllowedMIGProfiles: []string{"1g.10gb"}, FractionsEnabled: true, VClusterName: layeredTeam,
}

// TestWithWebhook: pods as tenants write them — no pool, wildcard tolerations,
// another pool's selector, shares — are admitted with both layers on, and
// land in the pool.
func TestWithWebhook(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	hook := startWebhook(ctx, t)
	tenantLayered, err := impersonate(vclusterUser(layeredTeam))
	if err != nil {
		t.Fatal(err)
	}
	pods := tenantLayered.CoreV1().Pods(layeredNS)
	test := t
	health := corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	for name, tc := range map[string]struct {
		pod   *testobj.PodWrapper
		node  string                  // prefix of the node it must run on; "" = only admitted
		check func(*corev1.Pod) error // what the webhook must have left
	}{
		"CPU pod":                           {pod: testobj.Pod("cpu", layeredNS), node: "a100"},
		"GPU pod":                           {pod: testobj.Pod("gpu", layeredNS).GPUs("2"), node: "a100-0"},
		"MIG pod":                           {pod: testobj.Pod("mig", layeredNS).MIG("1g.10gb", "2"), node: "a100-mig-0"},
		"wildcard toleration (removed)":     {pod: testobj.Pod("wildcard", layeredNS).GPUs("1").TolerateEverything(), node: "a100-0"},
		"selector for h100 (replaced)":      {pod: testobj.Pod("h100", layeredNS).GPUs("1").InPool("h100"), node: "a100-0"},
		"fraction (gated, own share CM)":    {pod: testobj.Pod("fraction", layeredNS).GPUFraction("0.5"), node: ""},
		"own scheduler (replaced)":          {pod: testobj.Pod("scheduler", layeredNS).SchedulerName("my-scheduler"), node: "a100"},
		"critical priority class (removed)": {pod: testobj.Pod("priority", layeredNS).PriorityClass("system-node-critical"), node: "a100"},
		"foreign runtime class (removed)":   {pod: testobj.Pod("runtime", layeredNS).RuntimeClass(foreignRuntime), node: ""},
		"KAI queue (removed)":               {pod: testobj.Pod("queue", layeredNS).Label(contract.LabelKAIQueue, "other-queue"), node: ""},
		"forged gpuvc metadata (removed)": {pod: testobj.Pod("forged", layeredNS).Label(contract.LabelRole, contract.RoleReservation).
			Annotation(contract.AnnotationGPUUUID, "GPU-victim").Label(contract.LabelShareGroup, "x"), node: "a100"},
		"init container and sidecar on GPU": {pod: testobj.Pod("sidecar", layeredNS).GPUs("1").Sidecar("proxy").LimitOn("proxy", contract.ResourceGPU, "1").InitContainer("warmup").LimitOn("warmup", contract.ResourceGPU, "1"), node: "a100-0"},
		// Issue 22's families: what the webhook removes, the fence admits as left.
		"GPU health taint toleration (removed)": {pod: testobj.Pod("tol-health", layeredNS).Toleration(health), node: "a100",
			check: noToleration(contract.TaintGPUUnhealthy)},
		"unschedulable toleration (removed)": {pod: testobj.Pod("tol-cordon", layeredNS).Toleration(corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}),
			node: "a100", check: noToleration(corev1.TaintNodeUnschedulable)},
		"not-ready forever (removed)": {pod: testobj.Pod("tol-notready", layeredNS).Toleration(corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}),
			check: func(p *corev1.Pod) error {
				for _, t := range p.Spec.Tolerations {
					if t.Key == corev1.TaintNodeNotReady && (t.TolerationSeconds == nil || *t.TolerationSeconds > syncer.MaxNodeProblemTolerationSeconds) {
						return fmt.Errorf("unbounded not-ready toleration stored: %+v", t)
					}
				}
				return nil
			}},
		"Kueue priority class (removed)": {pod: testobj.Pod("kueue-priority", layeredNS).Label(contract.LabelKueuePriorityClass, "cluster-critical"), node: "a100",
			check: noLabel(contract.LabelKueuePriorityClass)},
		"Kueue queue name (removed)": {pod: testobj.Pod("kueue-queue", layeredNS).Label(contract.LabelKueueQueueName, "other"), node: "a100",
			check: noLabel(contract.LabelKueueQueueName)},
		"share gate without a share (removed)": {pod: testobj.Pod("gate-share", layeredNS).SchedulingGate(contract.GateGPUShare), node: "a100", check: noGates},
		"Kueue gate without a queue (removed)": {pod: testobj.Pod("gate-kueue", layeredNS).SchedulingGate(contract.KueueAdmissionGate), node: "a100", check: noGates},
	} {
		t.Run(name, func(t *testing.T) {
			created, err := pods.Create(ctx, tc.pod.Obj(), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("refused with both layers on: %v", err)
			}
			deleteAtEnd(test, layeredNS, created.Name)
			if got := created.Spec.NodeSelector[contract.LabelPool]; got != pool {
				t.Errorf("the webhook did not pin the pool: nodeSelector %v", created.Spec.NodeSelector)
			}
			if tc.check != nil {
				if err := tc.check(created); err != nil {
					t.Error(err)
				}
			}
			if tc.node != "" {
				got := poll.Pod(ctx, t, env.cp.Client, layeredNS, created.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
				if len(got.Spec.NodeName) < len(tc.node) || got.Spec.NodeName[:len(tc.node)] != tc.node {
					t.Errorf("runs on %s, want %s", got.Spec.NodeName, tc.node)
				}
			}
		})
	}

	t.Run("update adding an h100 toleration (restored by the webhook)", func(t *testing.T) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, "cpu", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule})
			_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("refused with both layers on: %v", err)
		}
		p, err := pods.Get(ctx, "cpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tol := range p.Spec.Tolerations {
			if tol.Value == "h100" {
				t.Errorf("toleration %+v stored", tol)
			}
		}
	})

	t.Run("update removing the share gate (restored by the webhook)", func(t *testing.T) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, "fraction", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.SchedulingGates = nil
			p.Labels["app"] = "v2"
			_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("refused with both layers on: %v", err)
		}
		p, err := pods.Get(ctx, "fraction", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.SchedulingGates) != 1 || p.Labels["app"] != "v2" {
			t.Errorf("stored gates %v, labels %v: want the share gate kept and app=v2", p.Spec.SchedulingGates, p.Labels)
		}
	})

	t.Run("the team's vCluster control plane", func(t *testing.T) {
		sts := testobj.StatefulSet(layeredTeam, layeredNS, testobj.Pod("", "").Obj())
		if _, err := env.cp.Client.AppsV1().StatefulSets(layeredNS).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := poll.Pod(ctx, t, env.cp.Client, layeredNS, layeredTeam+"-0", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if got.Spec.NodeName != "system-0" {
			t.Errorf("control plane runs on %s, want system-0", got.Spec.NodeName)
		}
	})

	// The layers agree on Pod Security baseline: the webhook refuses every
	// baseline attack (before the fence sees it) with the fence's words, and
	// admits what the fence admits — in a namespace labelled podSecurity:
	// privileged.
	for name, a := range baselineAttacks() {
		t.Run("webhook refuses "+name, func(t *testing.T) {
			pod := a.pod.Obj()
			pod.Namespace = layeredNS
			_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			refusedByWebhook(t, err, a.want...)
		})
	}
	for name, pw := range baselineLegitimate() {
		t.Run("both layers admit "+name, func(t *testing.T) {
			pod := pw.Obj()
			pod.Namespace = layeredNS
			created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("refused with both layers on: %v", err)
			}
			deleteAtEnd(test, layeredNS, created.Name)
		})
	}

	// Issue 22's families the webhook refuses (before the fence, which refuses
	// them too: escapeAttacks).
	for name, tc := range map[string]struct {
		pod  *testobj.PodWrapper
		want []string
	}{
		"the control plane's service account": {withServiceAccount(testobj.Pod("sa-cp", layeredNS), "vc-"+layeredTeam),
			refusal(syncer.ReasonReservedServiceAccount, "spec.serviceAccountName=vc-layered", "limit: workload pods run as vc-workload-layered or default")},
		"the reservation account": {withServiceAccount(testobj.Pod("sa-reserve", layeredNS), contract.ReserveServiceAccount),
			refusal(syncer.ReasonReservedServiceAccount, "spec.serviceAccountName=gpuvc-reserve")},
		"node affinity pool In [h100]": {testobj.Pod("affinity-h100", layeredNS).RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, "h100"),
			refusal(syncer.ReasonAffinityOutsidePool, "gpuvc.dev/pool In [h100]")},
		"envFrom a ConfigMap setting NVIDIA_VISIBLE_DEVICES": {testobj.Pod("envfrom-devices", layeredNS).EnvFromConfigMap(devicesConfigMap),
			refusal(syncer.ReasonGPUEnvFrom, "spec.containers[0].envFrom[0].configMapRef.name="+devicesConfigMap, `"NVIDIA_VISIBLE_DEVICES"`)},
		"envFrom a Secret setting NVIDIA_VISIBLE_DEVICES with a prefix": {testobj.Pod("envfrom-secret", layeredNS).Edit(func(p *corev1.Pod) {
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "NVIDIA_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: devicesConfigMap}}}}
		}), refusal(syncer.ReasonGPUEnvFrom, "envFrom[0].secretRef.name="+devicesConfigMap, "sets NVIDIA_VISIBLE_DEVICES")},
	} {
		t.Run("webhook refuses "+name, func(t *testing.T) {
			_, err := pods.Create(ctx, tc.pod.Obj(), metav1.CreateOptions{})
			refusedByWebhook(t, err, tc.want...)
		})
	}
	t.Run("both layers admit the workload account and an envFrom without device variables", func(t *testing.T) {
		created, err := pods.Create(ctx, withServiceAccount(testobj.Pod("sa-workload", layeredNS), "vc-workload-"+layeredTeam).EnvFromConfigMap("plain").Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("refused with both layers on: %v", err)
		}
		deleteAtEnd(test, layeredNS, created.Name)
	})

	// Where the layers differ: the webhook admits a nodeName inside the pool,
	// the CEL fence (which cannot look nodes up) refuses every nodeName.
	t.Run("nodeName inside the pool is refused by the CEL fence", func(t *testing.T) {
		_, err := pods.Create(ctx, testobj.Pod("pinned", layeredNS).NodeName("a100-0").Obj(), metav1.CreateOptions{})
		refusedByFence(t, err, refusal(c.ReasonNodeNameSet, "spec.nodeName=a100-0")...)
	})

	t.Run("routine pods skip the validating webhook", func(t *testing.T) { routinePodsSkipTheValidatingWebhook(ctx, t, hook) })
	t.Run("routine pods cannot be smuggled past it", func(t *testing.T) { routinePodsCannotBeSmuggled(ctx, t, hook) })
}

// devicesConfigMap names the ConfigMap and the Secret of the layered namespace
// that would set NVIDIA_VISIBLE_DEVICES through envFrom.
const devicesConfigMap = "devices"

func noToleration(key string) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		for _, t := range p.Spec.Tolerations {
			if t.Key == key {
				return fmt.Errorf("toleration %+v stored", t)
			}
		}
		return nil
	}
}

func noLabel(key string) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		if v, ok := p.Labels[key]; ok {
			return fmt.Errorf("label %s=%s stored", key, v)
		}
		return nil
	}
}

func noGates(p *corev1.Pod) error {
	if len(p.Spec.SchedulingGates) > 0 {
		return fmt.Errorf("gates %v stored", p.Spec.SchedulingGates)
	}
	return nil
}

// startWebhook serves the syncer's webhook on a loopback port for the layered
// namespace and waits until the API server calls it.
// startWebhook serves gpuvc's webhook (with metrics) and the later webhook
// (routine_test.go) for the layered namespace, registered as the manager
// registers it: the CEL fence guards the namespace too (FencedByCEL).
func startWebhook(ctx context.Context, t *testing.T) layeredHook {
	t.Helper()
	cp := env.cp
	reader, err := client.New(cp.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := syncer.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	wh, err := syncer.New(syncer.Options{
		Policies:   &syncertest.NamespacePolicies{Reader: reader, Teams: map[string]syncer.TeamPolicy{layeredTeam: layeredPolicy}},
		Nodes:      syncer.ClientNodePools{Reader: reader},
		MIG:        migmap.Catalog{},
		EnvSources: syncer.ClientEnvSources{Reader: reader},
		Metrics:    metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := syncertest.Serve(ctx, t.TempDir(), time.Minute, func(s webhook.Server) {
		wh.Register(s)
		s.Register(laterPath, &webhook.Admission{Handler: laterWebhook{}})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)

	mutating, validating := syncer.Configurations(syncer.ConfigOptions{
		Name: "celpolicy-test-" + layeredTeam, URL: srv.URL, CABundle: srv.CA, FencedByCEL: true,
	})
	onlyLayered := func() *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{layeredLabel: "on"}}
	}
	mutating.Webhooks[0].NamespaceSelector = onlyLayered()
	for i := range validating.Webhooks { // pods and DRA objects
		validating.Webhooks[i].NamespaceSelector = onlyLayered()
	}
	admission := cp.Client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admission.MutatingWebhookConfigurations().Delete(context.Background(), mutating.Name, metav1.DeleteOptions{})
		_ = admission.ValidatingWebhookConfigurations().Delete(context.Background(), validating.Name, metav1.DeleteOptions{})
	})

	// The namespace: a team namespace with CEL parameters, selected by the
	// webhook too.
	if err := createTeamNamespace(ctx, layeredNS, layeredTeam, c.PolicyParams(&layeredPolicy)); err != nil {
		t.Fatal(err)
	}
	if err := createPlatformServiceAccounts(ctx, layeredNS, layeredTeam); err != nil {
		t.Fatal(err)
	}
	// A ConfigMap and a Secret whose keys would set NVIDIA_VISIBLE_DEVICES, and
	// a ConfigMap without device variables.
	for name, data := range map[string]map[string]string{devicesConfigMap: {"NVIDIA_VISIBLE_DEVICES": "all"}, "plain": {"APP_MODE": "train"}} {
		if _, err := cp.Client.CoreV1().ConfigMaps(layeredNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cp.Client.CoreV1().Secrets(layeredNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: devicesConfigMap},
		StringData: map[string]string{"VISIBLE_DEVICES": "all"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cp.Client.CoreV1().Namespaces().Get(ctx, layeredNS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels[layeredLabel] = "on"
	for k, v := range testobj.PodSecurityLabels("privileged") {
		ns.Labels[k] = v
	}
	if _, err := cp.Client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod without a pool is refused by the CEL fence alone; once the webhook
	// pins the pool, it is admitted.
	probe := testobj.Pod("probe", layeredNS).Obj()
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := cp.Client.CoreV1().Pods(layeredNS).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		last = err
		return err == nil && got.Labels[contract.LabelTeam] == layeredTeam, nil
	}); err != nil {
		t.Fatalf("the API server never called the webhook: %v (last: %v)", err, last)
	}
	return layeredHook{url: srv.URL, ca: srv.CA, metrics: metrics}
}

// refusedByWebhook asserts that gpuvc's mutating webhook refused the request
// with every word given. The webhook lists every refusal ("gpuvc: A: ...; B:
// ..."), so the reason may come later than first.
func refusedByWebhook(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want a refusal by the webhook containing %q", words)
	}
	msg := err.Error()
	t.Logf("refusal: %s", msg)
	if !strings.Contains(msg, `admission webhook "pods.mutate.gpuvc.dev" denied the request`) {
		t.Fatalf("refused, but not by gpuvc's mutating webhook: %s", msg)
	}
	for i, w := range words {
		if i == 0 {
			w = strings.TrimPrefix(w, "gpuvc: ")
		}
		if !strings.Contains(msg, w) {
			t.Errorf("refusal lacks %q", w)
		}
	}
}
