package charts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/pki"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/vclusters"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// TestInstall installs the chart with the Helm SDK on the local control plane and
// checks, as the identities the chart creates: that the API server accepts every
// object; that the agent DaemonSet lands on exactly the GPU nodes and its node fence
// holds with a real pod-bound token; that the manager's RBAC allows what it needs and
// nothing it must not (SubjectAccessReview); that the real manager, authenticated as
// its ServiceAccount, provisions and deletes a team — Helm installing vCluster's
// chart, Role and ClusterRole included — and admits the team's pods through its
// webhook; then upgrades to self-managed certificates, runs the manager's own
// certificate rotation as the ServiceAccount, and uninstalls.
func TestInstall(t *testing.T) {
	ctx := localcp.Context(t, 10*time.Minute)
	installCertManagerCRDs(ctx, t)
	h := newHelm(t)

	rel := h.install(ctx, t, "")
	t.Run("objects", func(t *testing.T) { checkObjects(ctx, t, rel) })
	t.Run("webhook configurations", func(t *testing.T) { checkStoredWebhooks(ctx, t) })
	t.Run("agent scheduling", func(t *testing.T) { checkAgentScheduling(ctx, t) })
	t.Run("agent node fence", func(t *testing.T) { checkAgentFence(ctx, t) })
	t.Run("agent node fence with cordon-drain", func(t *testing.T) {
		h.upgrade(ctx, t, "agent: {gpuFailure: cordon-drain}")
		defer h.upgrade(ctx, t, "")
		checkAgentCordonFence(ctx, t)
	})
	t.Run("manager access", func(t *testing.T) {
		checkAccess(ctx, t, managerNeeds(), leaderElectionNeeds())
		checkRefused(ctx, t, realNodesOnly())
	})
	t.Run("manager runs as its ServiceAccount", func(t *testing.T) { runManagerAsServiceAccount(ctx, t) })

	t.Run("real nodes need vcluster.syncRealNodes", func(t *testing.T) { checkRealNodes(ctx, t, h) })
	t.Run("DRA teams need vcluster.dra", func(t *testing.T) { checkDRA(ctx, t, h) })

	rel = h.upgrade(ctx, t, "certManager: {enabled: false}")
	t.Run("self-managed certificates", func(t *testing.T) {
		if _, err := host.Client.CoreV1().Secrets(testNamespace).Get(ctx, WebhookSecretName, metav1.GetOptions{}); err != nil {
			t.Errorf("Secret for the rotator: %v", err)
		}
		checkObjects(ctx, t, rel)
		checkAccess(ctx, t, rotatorNeeds())
		written := checkSelfManagedCerts(ctx, t)
		// What the rotator wrote survives the next helm upgrade, which changes the
		// webhooks: neither the Secret's data nor the caBundles are in the chart's
		// manifest, and Helm's three-way merge keeps them.
		h.upgrade(ctx, t, "certManager: {enabled: false}\nwebhook: {timeoutSeconds: 5}")
		sec, err := host.Client.CoreV1().Secrets(testNamespace).Get(ctx, WebhookSecretName, metav1.GetOptions{})
		if err != nil || !reflect.DeepEqual(sec.Data, written.Data) {
			t.Errorf("after helm upgrade the rotator's Secret holds %d keys (%v), want the %d it wrote", len(sec.Data), err, len(written.Data))
		}
		api := host.Client.AdmissionregistrationV1()
		m, err := api.MutatingWebhookConfigurations().Get(ctx, WebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := api.ValidatingWebhookConfigurations().Get(ctx, WebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *m.Webhooks[0].TimeoutSeconds != 5 || *v.Webhooks[0].TimeoutSeconds != 5 {
			t.Error("helm upgrade did not change timeoutSeconds")
		}
		if !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, written.Data["ca.crt"]) || !bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, written.Data["ca.crt"]) {
			t.Error("helm upgrade removed or changed the caBundle the rotator wrote")
		}
	})

	h.uninstall(ctx, t)
	t.Run("uninstalled", func(t *testing.T) { checkGone(ctx, t, rel) })
}

// helmClient runs Helm actions on the local control plane.
type helmClient struct{ cfg *action.Configuration }

func newHelm(t *testing.T) *helmClient { return helmIn(t, testNamespace) }

// helmIn is a Helm client, as the administrator, for releases of a namespace.
func helmIn(t *testing.T, namespace string) *helmClient {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig, ns := host.Kubeconfig, namespace
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	return &helmClient{cfg: cfg}
}

func (h *helmClient) get(name string) (*release.Release, error) {
	return action.NewGet(h.cfg).Run(name)
}

func values(t *testing.T, valuesYAML string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(valuesYAML), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

func (h *helmClient) install(ctx context.Context, t *testing.T, valuesYAML string) *release.Release {
	t.Helper()
	ch, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(h.cfg)
	inst.ReleaseName, inst.Namespace, inst.CreateNamespace = testRelease, testNamespace, true
	inst.Timeout = 2 * time.Minute
	start := time.Now()
	rel, err := inst.RunWithContext(ctx, ch, values(t, valuesYAML))
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	t.Logf("helm install: revision %d %s in %v", rel.Version, rel.Info.Status, time.Since(start).Round(time.Millisecond))
	return rel
}

func (h *helmClient) upgrade(ctx context.Context, t *testing.T, valuesYAML string) *release.Release {
	t.Helper()
	ch, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	up := action.NewUpgrade(h.cfg)
	up.Namespace, up.Timeout = testNamespace, 2*time.Minute
	rel, err := up.RunWithContext(ctx, testRelease, ch, values(t, valuesYAML))
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	return rel
}

func (h *helmClient) uninstall(ctx context.Context, t *testing.T) {
	t.Helper()
	un := action.NewUninstall(h.cfg)
	un.Timeout = 2 * time.Minute
	if _, err := un.Run(testRelease); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
}

// installCertManagerCRDs stands in for cert-manager: permissive CRDs for Certificate
// and Issuer, so the default values install. Nothing issues certificates here.
func installCertManagerCRDs(ctx context.Context, t *testing.T) {
	t.Helper()
	cs, err := apiextensionsclient.NewForConfig(host.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Certificate", "Issuer"} {
		plural := strings.ToLower(kind) + "s"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true),
					}},
				}},
			},
		}
		if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		poll.Until(ctx, t, 2*time.Minute, "CRD "+crd.Name+" established", func(ctx context.Context) (bool, error) {
			got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	}
}

// resourceClient resolves a rendered object to a dynamic client.
func resourceClient(t *testing.T, mapper apimeta.RESTMapper, dyn dynamic.Interface, kind, apiVersion, namespace string) dynamic.ResourceInterface {
	t.Helper()
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", apiVersion, kind, err)
	}
	if m.Scope.Name() == apimeta.RESTScopeNameNamespace {
		return dyn.Resource(m.Resource).Namespace(namespace)
	}
	return dyn.Resource(m.Resource)
}

func clients(t *testing.T) (apimeta.RESTMapper, dynamic.Interface) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(host.Config)
	if err != nil {
		t.Fatal(err)
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(host.Client.Discovery())), dyn
}

// checkObjects: every object of the release exists as rendered.
func checkObjects(ctx context.Context, t *testing.T, rel *release.Release) {
	objs, err := parseManifests(rel.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	mapper, dyn := clients(t)
	for _, u := range objs {
		if _, err := resourceClient(t, mapper, dyn, u.GetKind(), u.GetAPIVersion(), u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("%s: %v", id(u.GetKind(), u.GetNamespace(), u.GetName()), err)
		}
	}
	if _, err := apiextensionsclient.NewForConfigOrDie(host.Config).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "teams.gpuvc.dev", metav1.GetOptions{}); err != nil {
		t.Errorf("Team CRD from crds/: %v", err)
	}
}

// checkGone: after uninstall no cluster-scoped object of the chart remains (the
// namespace's objects go with Helm too).
func checkGone(ctx context.Context, t *testing.T, rel *release.Release) {
	objs, err := parseManifests(rel.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	mapper, dyn := clients(t)
	for _, u := range objs {
		_, err := resourceClient(t, mapper, dyn, u.GetKind(), u.GetAPIVersion(), u.GetNamespace()).Get(ctx, u.GetName(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s still there after uninstall (%v)", id(u.GetKind(), u.GetNamespace(), u.GetName()), err)
		}
	}
}

// checkStoredWebhooks: the API server stored the configurations as syncer.Configurations
// builds them (its defaulting changes nothing gpuvc relies on).
func checkStoredWebhooks(ctx context.Context, t *testing.T) {
	m, err := host.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, WebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := host.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, WebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wm, wv := m.Webhooks[0], v.Webhooks[0]
	if *wm.FailurePolicy != admissionregistrationv1.Fail || *wv.FailurePolicy != admissionregistrationv1.Fail {
		t.Error("failurePolicy is not Fail")
	}
	for _, sel := range []*metav1.LabelSelector{wm.NamespaceSelector, wv.NamespaceSelector} {
		if len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != contract.LabelTeam || sel.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
			t.Errorf("namespaceSelector %+v", sel)
		}
	}
	if *wm.ClientConfig.Service.Path != syncer.MutatePath || *wv.ClientConfig.Service.Path != syncer.ValidatePath {
		t.Errorf("paths %s, %s", *wm.ClientConfig.Service.Path, *wv.ClientConfig.Service.Path)
	}
	if m.Annotations["cert-manager.io/inject-ca-from"] != testNamespace+"/gpuvc-webhook" {
		t.Errorf("annotations %v", m.Annotations)
	}
	// The agent's node fence: its CEL type-checks on this API server.
	poll.Until(ctx, t, 2*time.Minute, "type checking of gpuvc-agent-node-fence", func(ctx context.Context) (bool, error) {
		p, err := host.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "gpuvc-agent-node-fence", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.ObservedGeneration != p.Generation || p.Status.TypeChecking == nil {
			return false, nil
		}
		for _, w := range p.Status.TypeChecking.ExpressionWarnings {
			t.Errorf("gpuvc-agent-node-fence %s: %s", w.FieldRef, w.Warning)
		}
		return true, nil
	})
}

// gpuNodes are the local control plane's GPU nodes (nodepool.Default); system-0 is
// the CPU-only system pool.
var gpuNodes = []string{"a100-0", "a100-mig-0", "h100-0"}

// checkAgentScheduling: the default affinity and tolerations put one agent on every
// GPU pool node (tainted) and none in the system pool.
func checkAgentScheduling(ctx context.Context, t *testing.T) {
	var nodes []string
	poll.Until(ctx, t, 2*time.Minute, "agent pods on the GPU nodes", func(ctx context.Context) (bool, error) {
		pods, err := host.Client.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=agent"})
		if err != nil {
			return false, err
		}
		nodes = nil
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				return false, nil
			}
			nodes = append(nodes, p.Spec.NodeName)
		}
		return len(nodes) >= len(gpuNodes), nil
	})
	if !slices.Equal(sorted(nodes), sorted(gpuNodes)) {
		t.Errorf("agent pods on %v, want exactly %v", nodes, gpuNodes)
	}
}

// checkAgentFence uses a token bound to the agent pod on a100-0, as the kubelet
// would mount it, to publish like the agent does and to try what it must not.
func checkAgentFence(ctx context.Context, t *testing.T) {
	pods, err := host.Client.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/component=agent", FieldSelector: "spec.nodeName=a100-0",
	})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("agent pod on a100-0: %v %v", pods, err)
	}
	pod := pods.Items[0]
	agent := saClient(ctx, t, AgentServiceAccount, &authenticationv1.BoundObjectReference{
		Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID,
	})
	unbound := saClient(ctx, t, AgentServiceAccount, nil)
	// Attempts that must be refused are dry runs (admission runs on them too), so a
	// fence that fails this test does not damage the nodes other tests use.
	publish := func(c kubernetes.Interface, node string, labels, annotations map[string]string, dryRun bool) error {
		opts := metav1.ApplyOptions{FieldManager: "gpuvc-agent", Force: true}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := c.CoreV1().Nodes().Apply(ctx, corev1ac.Node(node).WithLabels(labels).WithAnnotations(annotations), opts)
		return err
	}
	// The API server enforces a new policy once its informers have it.
	poll.Until(ctx, t, 2*time.Minute, "the node fence to be enforced", func(context.Context) (bool, error) {
		return publish(agent, "h100-0", map[string]string{"nvidia.com/gpu.product": "probe"}, nil, true) != nil, nil
	})
	inventory := map[string]string{"gpuvc.dev/gpu-inventory": `{"gpus":[]}`}
	cases := []struct {
		name        string
		client      kubernetes.Interface
		node        string
		labels      map[string]string
		annotations map[string]string
		refusal     string // "" = allowed
	}{
		{"own node, GPU labels and inventory", agent, "a100-0",
			map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "gpuvc.dev/simulated": "true"}, inventory, ""},
		{"own node, pool label", agent, "a100-0",
			map[string]string{"gpuvc.dev/pool": "h100"}, nil, "may only change nvidia.com/ labels"},
		{"own node, foreign annotation", agent, "a100-0",
			nil, map[string]string{"example.com/x": "y"}, "may only change the annotations gpuvc.dev/gpu-inventory, gpuvc.dev/unhealthy-gpus"},
		{"another node", agent, "h100-0",
			map[string]string{"nvidia.com/gpu.product": "fake"}, nil, "may only change the node it runs on (a100-0), not h100-0"},
		{"token without a node", unbound, "a100-0",
			map[string]string{"nvidia.com/gpu.product": "fake"}, nil, "its token names no node"},
	}
	for _, tc := range cases {
		err := publish(tc.client, tc.node, tc.labels, tc.annotations, tc.refusal != "")
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s: got %v, want a refusal saying %q", tc.name, err, tc.refusal)
		}
	}
	// Taints: a strategic merge patch, as a compromised agent would send it.
	_, err = agent.CoreV1().Nodes().Patch(ctx, "a100-0", types.StrategicMergePatchType,
		[]byte(`{"spec":{"taints":[]}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || !strings.Contains(err.Error(), "may not change a node's spec") {
		t.Errorf("agent removing its node's taints: %v, want a refusal", err)
	}
	// GPU health with the default policy (taint): the agent's annotation and its
	// taint are allowed, the cordon (cordon-drain only) is not. Dry runs.
	node, err := host.Client.CoreV1().Nodes().Get(ctx, "a100-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dry := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	taints, _ := json.Marshal(append(slices.Clone(node.Spec.Taints), corev1.Taint{Key: "gpuvc.dev/gpu-unhealthy", Value: "true", Effect: corev1.TaintEffectNoSchedule}))
	runtimeTaints, _ := json.Marshal(append(slices.Clone(node.Spec.Taints), corev1.Taint{Key: contract.TaintGPURuntimeUnsafe, Value: "true", Effect: corev1.TaintEffectNoSchedule}))
	otherTaints, _ := json.Marshal(append(slices.Clone(node.Spec.Taints), corev1.Taint{Key: "gpuvc.dev/other", Value: "true", Effect: corev1.TaintEffectNoSchedule}))
	for _, tc := range []struct{ name, patch, refusal string }{
		{"unhealthy-GPU annotation", `{"metadata":{"annotations":{"gpuvc.dev/unhealthy-gpus":"GPU-x"}}}`, ""},
		{"quarantine record and GPU-seconds lost", `{"metadata":{"annotations":{"gpuvc.dev/gpu-quarantine":"{}","gpuvc.dev/gpu-seconds-lost":"{}"}}}`, ""},
		{"an operator's clear, set by the agent", `{"metadata":{"annotations":{"gpuvc.dev/gpu-quarantine-clear":"all"}}}`, "may only change the annotations"},
		{"cordon marker without a cordon", `{"metadata":{"annotations":{"gpuvc.dev/gpu-health-cordoned":"true"}}}`, "only while it cordons a schedulable node"},
		{"the agent's taint", `{"spec":{"taints":` + string(taints) + `}}`, ""},
		{"the agent's runtime taint", `{"spec":{"taints":` + string(runtimeTaints) + `}}`, ""},
		{"another gpuvc taint", `{"spec":{"taints":` + string(otherTaints) + `}}`, "may not change a node's spec"},
		{"cordon without cordon-drain", `{"spec":{"unschedulable":true}}`, "may not change a node's spec"},
	} {
		_, err := agent.CoreV1().Nodes().Patch(ctx, "a100-0", types.MergePatchType, []byte(tc.patch), dry)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s: got %v, want a refusal saying %q", tc.name, err, tc.refusal)
		}
	}
	if node.Labels["gpuvc.dev/pool"] != "a100" || len(node.Spec.Taints) == 0 {
		t.Errorf("a100-0 changed: labels %v taints %v", node.Labels, node.Spec.Taints)
	}
}

// checkAgentCordonFence: with gpuFailure cordon-drain the agent may cordon a
// schedulable node together with its marker gpuvc.dev/gpu-health-cordoned, and
// lift only a cordon that carries the marker, removing it; an operator's
// cordon stays out of its reach.
func checkAgentCordonFence(ctx context.Context, t *testing.T) {
	var agent kubernetes.Interface
	poll.Until(ctx, t, 2*time.Minute, "the agent pod on a100-0 with --gpu-failure=cordon-drain", func(ctx context.Context) (bool, error) {
		pods, err := host.Client.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/component=agent", FieldSelector: "spec.nodeName=a100-0",
		})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].DeletionTimestamp != nil ||
			!slices.Contains(pods.Items[0].Spec.Containers[0].Args, "--gpu-failure=cordon-drain") {
			return false, err
		}
		p := pods.Items[0]
		agent = saClient(ctx, t, AgentServiceAccount, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID})
		return true, nil
	})
	nodes := host.Client.CoreV1().Nodes()
	setCordon := func(cordoned bool, marker bool) {
		t.Helper()
		ann := map[string]any{"gpuvc.dev/gpu-health-cordoned": nil}
		if marker {
			ann["gpuvc.dev/gpu-health-cordoned"] = "true"
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}, "spec": map[string]any{"unschedulable": cordoned}})
		if _, err := nodes.Patch(ctx, "a100-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { setCordon(false, false) })
	dry := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	try := func(patch string) error {
		_, err := agent.CoreV1().Nodes().Patch(ctx, "a100-0", types.MergePatchType, []byte(patch), dry)
		return err
	}
	const cordonWithMarker = `{"metadata":{"annotations":{"gpuvc.dev/gpu-health-cordoned":"true"}},"spec":{"unschedulable":true}}`
	// The upgraded policy is enforced once the API server's informers have it.
	poll.Until(ctx, t, 2*time.Minute, "cordon-drain's node fence to be enforced", func(context.Context) (bool, error) {
		return try(cordonWithMarker) == nil, nil
	})
	const uncordonWithMarker = `{"metadata":{"annotations":{"gpuvc.dev/gpu-health-cordoned":null}},"spec":{"unschedulable":false}}`
	for _, tc := range []struct {
		name          string
		cordoned, our bool
		patch         string
		refusal       string
	}{
		{"lift its own cordon, marker removed", true, true, uncordonWithMarker, ""},
		{"lift its own cordon, marker kept", true, true, `{"spec":{"unschedulable":false}}`, "may not change a node's spec"},
		{"lift an operator's cordon", true, false, `{"spec":{"unschedulable":false}}`, "may not change a node's spec"},
		{"mark an operator's cordon as its own", true, false, `{"metadata":{"annotations":{"gpuvc.dev/gpu-health-cordoned":"true"}}}`, "only while it cordons a schedulable node"},
		{"mark and lift an operator's cordon at once", true, false, `{"metadata":{"annotations":{"gpuvc.dev/gpu-health-cordoned":"true"}},"spec":{"unschedulable":false}}`, "only while it cordons a schedulable node"},
	} {
		setCordon(tc.cordoned, tc.our)
		err := try(tc.patch)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s: got %v, want a refusal saying %q", tc.name, err, tc.refusal)
		}
	}
}

// saClient authenticates as a ServiceAccount of the release namespace with a token
// from the TokenRequest API, bound to an object (a pod) when given.
func saClient(ctx context.Context, t *testing.T, sa string, bound *authenticationv1.BoundObjectReference) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(saConfig(ctx, t, sa, bound))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func saConfig(ctx context.Context, t *testing.T, sa string, bound *authenticationv1.BoundObjectReference) *rest.Config {
	t.Helper()
	tr, err := host.Client.CoreV1().ServiceAccounts(testNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: bound},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", sa, err)
	}
	cfg := rest.AnonymousClientConfig(host.Config)
	cfg.BearerToken = tr.Status.Token
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// checkAccess asks the API server's authorizer (SubjectAccessReview) whether the
// manager's ServiceAccount may make each request, and that it may not make the
// requests managerMustNot lists.
func checkAccess(ctx context.Context, t *testing.T, needs ...[]request) {
	for _, list := range needs {
		for _, r := range list {
			if !managerAllowed(ctx, t, r) {
				t.Errorf("the API server refuses: %s", r)
			}
		}
	}
	checkRefused(ctx, t, managerMustNot)
}

func checkRefused(ctx context.Context, t *testing.T, requests []request) {
	for _, r := range requests {
		if managerAllowed(ctx, t, r) {
			t.Errorf("the API server allows: %s", r)
		}
	}
}

func managerAllowed(ctx context.Context, t *testing.T, r request) bool {
	t.Helper()
	res, sub, _ := strings.Cut(r.resource, "/")
	sar, err := host.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + testNamespace + ":" + ManagerServiceAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testNamespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: r.verb, Group: r.group, Resource: res, Subresource: sub, Namespace: r.namespace, Name: r.name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// runManagerAsServiceAccount runs gpuvc's manager in this process, authenticated
// with a token of the chart's ServiceAccount, leader-elected in the release
// namespace, with its pod webhook served on loopback (the webhook configurations
// are pointed there, as cainjector would fill their CA), and provisions and deletes
// a team. Any missing permission fails the team's conditions, the cache sync or
// the webhook.
func runManagerAsServiceAccount(ctx context.Context, t *testing.T) {
	certDir := t.TempDir()
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	bundle, err := pki.NewServing([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.WriteFiles(certDir); err != nil {
		t.Fatal(err)
	}
	restore := pointWebhooksAt(ctx, t, fmt.Sprintf("https://127.0.0.1:%d", port), bundle.CA)
	defer restore()

	src, err := vclusterstest.ChartSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctrl.SetLogger(logr.Discard())
	mgr, err := manager.New(ctx, saConfig(ctx, t, ManagerServiceAccount, nil), manager.Options{
		MetricsAddr: "0", HealthAddr: "0",
		LeaderElection: true, LeaderElectionNS: testNamespace,
		WebhookHost: "127.0.0.1", WebhookPort: port, WebhookCertDir: certDir,
		SystemPool: "system",
		// The share controller runs too (its informers and reservation RBAC).
		ReserveImage: "ghcr.io/gpuvc/gpuvc:test",
		Team: team.Options{
			Chart: src, Persistence: vclusters.Persistence{Ephemeral: true}, WaitInterval: 300 * time.Millisecond,
		},
		// The ledgers in the release namespace, as the chart's POD_NAMESPACE sets it.
		Accounting: accounting.Options{Namespace: testNamespace, Interval: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("manager did not stop within 30s")
		}
	}()

	c, err := client.New(host.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	tm := &gpuvcv1.Team{
		ObjectMeta: metav1.ObjectMeta{Name: "fraud"},
		Spec:       gpuvcv1.TeamSpec{Pool: "a100", Quota: gpuvcv1.Quota{GPUs: ptr.To[int32](4)}},
	}
	if err := c.Create(ctx, tm); err != nil {
		t.Fatal(err)
	}
	ns := gpuvcv1.HostNamespace(tm.Name)
	explain := func() {
		got := &gpuvcv1.Team{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(tm), got); err == nil {
			for _, cond := range got.Status.Conditions {
				t.Logf("team %s: %s=%s %s: %s", got.Name, cond.Type, cond.Status, cond.Reason, cond.Message)
			}
		}
		if evs, err := host.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{}); err == nil {
			for _, e := range evs.Items {
				t.Logf("event %s/%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	// Host resources applied, the vCluster release installed (no ReleaseFailed), and
	// its control-plane pod admitted by the webhook (which labels it gpuvc.dev/team).
	var reason string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &gpuvcv1.Team{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(tm), got); err != nil {
			return false, err
		}
		host := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionHostResourcesReady)
		vc := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionVClusterReady)
		if host == nil || host.Status != metav1.ConditionTrue || vc == nil || vc.Reason == "ReleaseFailed" {
			return false, nil
		}
		pods, err := hostClient().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelTeam + "=fraud"})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		reason = vc.Reason
		return true, nil
	})
	if err != nil {
		explain()
		t.Fatalf("team fraud provisioned by the manager's ServiceAccount: %v", err)
	}
	t.Logf("team fraud: host resources ready, vCluster %s", reason)
	// Every object of the vCluster release exists: Helm, as the manager, created them
	// all (its Role and, with node sync, its ClusterRole passed the escalation check).
	vcRelease, err := helmIn(t, ns).get("fraud")
	if err != nil {
		t.Fatalf("vCluster release: %v", err)
	}
	vcObjects, err := parseManifests(vcRelease.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var clusterScoped []string
	mapper, dyn := clients(t)
	for _, u := range vcObjects {
		objNS := u.GetNamespace()
		if objNS == "" {
			objNS = ns
		}
		ri := resourceClient(t, mapper, dyn, u.GetKind(), u.GetAPIVersion(), objNS)
		if _, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("vCluster release object %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if u.GetKind() == "ClusterRole" || u.GetKind() == "ClusterRoleBinding" {
			clusterScoped = append(clusterScoped, u.GetKind()+" "+u.GetName())
		}
	}
	t.Logf("vCluster release: %d objects created by the manager's ServiceAccount (cluster-scoped: %v)", len(vcObjects), clusterScoped)
	if evs, err := host.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			if strings.Contains(strings.ToLower(e.Message), "forbidden") {
				t.Errorf("event %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	// The reservation pods' account the manager creates per team (share controller).
	if _, err := host.Client.RbacV1().RoleBindings(ns).Get(ctx, contract.ReserveServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("reservation RBAC in %s: %v", ns, err)
	}
	lease, err := host.Client.CoordinationV1().Leases(testNamespace).Get(ctx, LeaderElectionID, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Errorf("leader-election lease %s: %v %+v", LeaderElectionID, err, lease)
	}

	// The team's GPU-time ledger, written in the release namespace.
	ledger := func(ok func(*corev1.ConfigMap) bool) error {
		return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			cm, err := host.Client.CoreV1().ConfigMaps(testNamespace).Get(ctx, accounting.LedgerName(tm.Name, tm.UID), metav1.GetOptions{})
			return err == nil && ok(cm), client.IgnoreNotFound(err)
		})
	}
	if err := ledger(func(*corev1.ConfigMap) bool { return true }); err != nil {
		t.Errorf("GPU-time ledger of team fraud in %s: %v", testNamespace, err)
	}

	// Deletion: Helm uninstall and the namespace, as the ServiceAccount.
	if err := c.Delete(ctx, tm); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(tm), &gpuvcv1.Team{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		explain()
		t.Fatalf("team fraud deleted by the manager's ServiceAccount: %v", err)
	}
	for _, u := range vcObjects {
		if u.GetNamespace() != "" || (u.GetKind() != "ClusterRole" && u.GetKind() != "ClusterRoleBinding") {
			continue // namespaced objects went with the namespace
		}
		ri := resourceClient(t, mapper, dyn, u.GetKind(), u.GetAPIVersion(), "")
		if _, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s after the team's deletion: %v", u.GetKind(), u.GetName(), err)
		}
	}
	// Its ledger stays, marked deleted.
	if err := ledger(func(cm *corev1.ConfigMap) bool { return cm.Annotations[accounting.AnnotationDeletedAt] != "" }); err != nil {
		t.Errorf("GPU-time ledger of deleted team fraud not kept and marked deleted: %v", err)
	}
}

func hostClient() kubernetes.Interface { return host.Client }

// pointWebhooksAt replaces the Service reference of both configurations with a URL
// and CA, as an administrator: the manager runs in this process, not behind the
// Service. The returned function puts the chart's client configurations back.
func pointWebhooksAt(ctx context.Context, t *testing.T, baseURL string, ca []byte) (restore func()) {
	t.Helper()
	api := host.Client.AdmissionregistrationV1()
	set := func(mutating, validating func(*admissionregistrationv1.WebhookClientConfig)) {
		m, err := api.MutatingWebhookConfigurations().Get(context.Background(), WebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mutating(&m.Webhooks[0].ClientConfig)
		if _, err := api.MutatingWebhookConfigurations().Update(context.Background(), m, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v, err := api.ValidatingWebhookConfigurations().Get(context.Background(), WebhookConfigurationName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		validating(&v.Webhooks[0].ClientConfig)
		if _, err := api.ValidatingWebhookConfigurations().Update(context.Background(), v, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var oldM, oldV admissionregistrationv1.WebhookClientConfig
	set(func(c *admissionregistrationv1.WebhookClientConfig) {
		oldM = *c
		*c = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + syncer.MutatePath), CABundle: ca}
	}, func(c *admissionregistrationv1.WebhookClientConfig) {
		oldV = *c
		*c = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + syncer.ValidatePath), CABundle: ca}
	})
	return func() {
		set(func(c *admissionregistrationv1.WebhookClientConfig) { *c = oldM },
			func(c *admissionregistrationv1.WebhookClientConfig) { *c = oldV })
	}
}

// checkRealNodes: a vCluster that syncs the host's real nodes brings a ClusterRole.
// With default values Helm, as the manager, is refused it (a Team's extra values
// cannot widen the manager's reach); with vcluster.syncRealNodes the manager holds
// what that ClusterRole grants and installs and removes it.
func checkRealNodes(ctx context.Context, t *testing.T, h *helmClient) {
	const ns = "team-nodes"
	if _, err := host.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = host.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}()
	src, err := vclusterstest.ChartSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := vclusters.New(saConfig(ctx, t, ManagerServiceAccount, nil))
	if err != nil {
		t.Fatal(err)
	}
	spec := vclusters.Spec{
		Name: "nodes", Namespace: ns, Pool: "a100", KubeconfigServer: "https://nodes." + ns + ".svc",
		Chart: src, Persistence: vclusters.Persistence{Ephemeral: true}, SyncRealNodes: true,
	}
	if _, err := vc.Apply(ctx, spec); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("vCluster with real nodes under default values: %v, want a refusal (forbidden)", err)
	}
	h.upgrade(ctx, t, "vcluster: {syncRealNodes: true}")
	var applyErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, applyErr = vc.Apply(ctx, spec)
		return applyErr == nil, nil
	})
	if err != nil {
		t.Fatalf("vCluster with real nodes and vcluster.syncRealNodes: %v", applyErr)
	}
	name := "vc-nodes-v-" + ns
	if _, err := host.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("vCluster's ClusterRole: %v", err)
	}
	if err := vc.Uninstall(ctx, spec); err != nil {
		t.Fatalf("uninstall as the manager: %v", err)
	}
	if _, err := host.Client.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("vCluster's ClusterRoleBinding after uninstall: %v", err)
	}
}

// checkDRA: a spec.dra team's vCluster syncs claims, so vCluster's chart
// brings a Role granting them and a ClusterRole reading DeviceClasses. Without
// vcluster.dra Helm, as the manager, is refused them; with it the manager
// holds what both grant and installs and removes them.
func checkDRA(ctx context.Context, t *testing.T, h *helmClient) {
	const ns = "team-dra"
	if _, err := host.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = host.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}()
	src, err := vclusterstest.ChartSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vc, err := vclusters.New(saConfig(ctx, t, ManagerServiceAccount, nil))
	if err != nil {
		t.Fatal(err)
	}
	spec := vclusters.Spec{
		Name: "dra", Namespace: ns, Pool: "a100", KubeconfigServer: "https://dra." + ns + ".svc",
		Chart: src, Persistence: vclusters.Persistence{Ephemeral: true}, DRA: true,
	}
	if _, err := vc.Apply(ctx, spec); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("vCluster of a spec.dra team without vcluster.dra: %v, want a refusal (forbidden)", err)
	}
	h.upgrade(ctx, t, "vcluster: {dra: true}")
	var applyErr error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, applyErr = vc.Apply(ctx, spec)
		return applyErr == nil, nil
	})
	if err != nil {
		t.Fatalf("vCluster of a spec.dra team with vcluster.dra: %v", applyErr)
	}
	name := "vc-dra-v-" + ns
	if cr, err := host.Client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("vCluster's ClusterRole: %v", err)
	} else if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "deviceclasses") }) {
		t.Errorf("vCluster's ClusterRole reads no DeviceClasses: %+v", cr.Rules)
	}
	if err := vc.Uninstall(ctx, spec); err != nil {
		t.Fatalf("uninstall as the manager: %v", err)
	}
}
