package charts

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Release the tests render and install.
const (
	testRelease   = "gpuvc"
	testNamespace = "gpuvc-system"
)

// testKubeVersion is the Kubernetes version the chart is rendered for (the local
// control plane's).
var testKubeVersion = &chartutil.KubeVersion{Version: "v1.36.3", Major: "1", Minor: "36"}

// manifests are the objects a chart rendered, in order.
type manifests []*unstructured.Unstructured

// render runs `helm template` on the embedded chart with values given as YAML.
func render(valuesYAML string) (manifests, error) { return renderFor(valuesYAML) }

// renderFor renders for a cluster that serves, beyond Kubernetes' own APIs, the
// given group/version/kind (e.g. "monitoring.coreos.com/v1/ServiceMonitor").
func renderFor(valuesYAML string, apiVersions ...string) (manifests, error) {
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(valuesYAML), &vals); err != nil {
		return nil, fmt.Errorf("test values: %w", err)
	}
	ch, err := Chart()
	if err != nil {
		return nil, err
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun = true
	inst.ClientOnly = true
	inst.ReleaseName = testRelease
	inst.Namespace = testNamespace
	inst.KubeVersion = testKubeVersion
	inst.APIVersions = append(chartutil.VersionSet(nil), apiVersions...)
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	return parseManifests(rel.Manifest)
}

func mustRender(t *testing.T, valuesYAML string) manifests {
	t.Helper()
	m, err := render(valuesYAML)
	if err != nil {
		t.Fatalf("rendering with values %q: %v", valuesYAML, err)
	}
	return m
}

func parseManifests(s string) (manifests, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewBufferString(s), 4096)
	var out manifests
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parsing rendered manifests: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}

// ids lists "Kind namespace/name" of every object.
func (m manifests) ids() []string {
	var ids []string
	for _, u := range m {
		ids = append(ids, id(u.GetKind(), u.GetNamespace(), u.GetName()))
	}
	return ids
}

func id(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

func (m manifests) find(kind, name string) *unstructured.Unstructured {
	for _, u := range m {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// get decodes the object of that kind and name into T, refusing unknown fields (a
// misspelt field in a template fails here instead of being dropped by the API server).
func get[T any](t *testing.T, m manifests, kind, name string) *T {
	t.Helper()
	u := m.find(kind, name)
	if u == nil {
		t.Fatalf("no %s %s rendered; have %s", kind, name, strings.Join(m.ids(), ", "))
	}
	obj := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
	return obj
}

// valueSets are the configurations every generic test (lint, strict decoding,
// security contexts) runs on.
var valueSets = map[string]string{
	"defaults": ``,
	"self-managed certificates": `
certManager: {enabled: false}`,
	"existing cluster issuer": `
certManager: {issuerRef: {name: corp-ca, kind: ClusterIssuer}}`,
	"agent off": `
agent: {enabled: false}`,
	"simulated agents": `
agent:
  simulate:
    a100: product=NVIDIA-A100-SXM4-80GB,count=8
    h100: product=NVIDIA-H100-80GB-HBM3,count=8`,
	"kind trial": `
vcluster: {ephemeral: true}
agent:
  simulate:
    a100: product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-balanced
  devicePlugin: {enabled: true}`,
	"real nodes": `
vcluster: {syncRealNodes: true}`,
	"dra": `
vcluster: {dra: true}`,
	"host storage classes": `
vcluster: {hostStorageClasses: true}`,
	"platform vCluster values": `
vcluster:
  values:
    controlPlane: {distro: {k8s: {image: {tag: v1.36.3}}}}`,
	"one replica without leader election": `
manager: {replicas: 1, leaderElection: {enabled: false}}`,
	"custom images": `
image: {repository: registry.example.com:5000/platform/gpuvc, tag: v1.2.3, pullPolicy: Always}
imagePullSecrets: [{name: regcred}]
manager: {reserveImage: registry.example.com:5000/platform/gpuvc-reserve:v1.2.3}`,
	"image by digest": `
image: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`,
	"metrics off": `
metrics: {enabled: false}`,
	"agent metrics off": `
agent: {metrics: {enabled: false}}`,
	"node agent outside the chart": `
agent: {enabled: false}
manager: {agentMetricsAddresses: ["10.88.0.1:9402"]}`,
	"service monitor": `
metrics: {serviceMonitor: {enabled: true, labels: {release: prometheus}}}`,
	"everything set": `
manager:
  replicas: 3
  teamServerURL: "https://{{.Team}}.vc.example.com"
  teamWorkers: 8
  controlPlanePool: system
  systemPool: system
  kueueUsers: ["system:serviceaccount:kueue:kueue", "admin:kueue"]
  usageHistoryPools: [a100, h100]
  notQueuedAfter: 2m
  deletedTeamRetention: 720h
  priorityClassName: platform-critical
  nodeSelector: {gpuvc.dev/pool: system}
  tolerations: [{key: dedicated, operator: Equal, value: platform, effect: NoSchedule}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}]}}}
  podAnnotations: {example.com/owner: platform}
  podLabels: {team: platform}
  extraVolumes: [{name: vcluster-chart, image: {reference: "registry.example.com/charts/vcluster:0.36.1"}}]
  extraVolumeMounts: [{name: vcluster-chart, mountPath: /charts/vcluster, readOnly: true}]
  resources: {requests: {cpu: 200m, memory: 512Mi}, limits: {cpu: 2, memory: 2Gi}}
vcluster: {chart: {dir: /charts/vcluster, version: 0.36.0}, metricsProxy: "off"}
webhook: {port: 10250, timeoutSeconds: 5}
metrics: {port: 9090}
agent:
  interval: 30s
  privileged: true
  runtimeClassName: nvidia
  priorityClassName: system-node-critical
  nodeSelector: {nvidia.com/gpu.present: "true"}
  podLabels: {team: platform}
  metrics: {port: 9500, podResourcesDir: /var/lib/kubelet/pod-resources}
  gpuRuntime: {policy: warn, toolkitConfigs: [/etc/nvidia-container-runtime/config.toml], deviceListStrategy: volume-mounts}`,
}

func TestLint(t *testing.T) {
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			vals := map[string]any{}
			if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
				t.Fatal(err)
			}
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = testNamespace
			lint.KubeVersion = testKubeVersion
			res := lint.Run([]string{ChartDir}, vals)
			for _, msg := range res.Messages {
				if msg.Severity > support.InfoSev {
					t.Errorf("helm lint --strict: %s", msg)
				}
			}
			for _, err := range res.Errors {
				t.Errorf("helm lint --strict: %v", err)
			}
			if res.TotalChartsLinted != 1 {
				t.Errorf("linted %d charts, want 1", res.TotalChartsLinted)
			}
		})
	}
}

// TestEmbeddedChart checks what `gpuvc install` would install: the chart, its
// schema and the Team CRD, from the binary.
func TestEmbeddedChart(t *testing.T) {
	ch, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	if ch.Name() != "gpuvc" || ch.Metadata.Version == "" || ch.Metadata.AppVersion == "" {
		t.Errorf("chart metadata %+v: want name gpuvc with version and appVersion", ch.Metadata)
	}
	if len(ch.Schema) == 0 {
		t.Error("values.schema.json is not part of the embedded chart")
	}
	if len(ch.CRDObjects()) != 1 || ch.CRDObjects()[0].Name != "crds/gpuvc.dev_teams.yaml" {
		t.Errorf("CRDs %v: want crds/gpuvc.dev_teams.yaml", ch.CRDObjects())
	}
	var helpers bool
	for _, tpl := range ch.Templates {
		helpers = helpers || tpl.Name == "templates/_helpers.tpl"
	}
	if !helpers {
		t.Error("templates/_helpers.tpl is missing from the embedded chart (embed needs all:)")
	}
}

// TestRenderedObjects lists exactly which objects each configuration creates.
func TestRenderedObjects(t *testing.T) {
	ns := func(kind, name string) string { return id(kind, testNamespace, name) }
	core := []string{
		ns("ServiceAccount", "gpuvc-manager"),
		id("ClusterRole", "", "gpuvc-manager"),
		id("ClusterRoleBinding", "", "gpuvc-manager"),
		id("ClusterRole", "", "gpuvc-manager-teams"),
		id("ClusterRoleBinding", "", "gpuvc-manager-teams"),
		ns("Deployment", "gpuvc-manager"),
		ns("Service", "gpuvc-webhook"),
		id("MutatingWebhookConfiguration", "", "gpuvc-syncer"),
		id("ValidatingWebhookConfiguration", "", "gpuvc-syncer"),
	}
	// The manager's Role in the release namespace: always (the GPU-time ledgers).
	core = append(core, ns("Role", "gpuvc-manager"), ns("RoleBinding", "gpuvc-manager"))
	pdb := []string{ns("PodDisruptionBudget", "gpuvc-manager")}
	metrics := []string{ns("Service", "gpuvc-metrics")}
	certManager := []string{ns("Issuer", "gpuvc-selfsigned"), ns("Certificate", "gpuvc-webhook")}
	agentRBAC := []string{
		ns("ServiceAccount", "gpuvc-agent"),
		id("ClusterRole", "", "gpuvc-agent"),
		id("ClusterRoleBinding", "", "gpuvc-agent"),
		id("ValidatingAdmissionPolicy", "", "gpuvc-agent-node-fence"),
		id("ValidatingAdmissionPolicyBinding", "", "gpuvc-agent-node-fence"),
	}
	agentRBACOnly := slices.Clone(agentRBAC)
	// With agent.metrics (default): the agents' headless metrics Service.
	agentRBAC = append(agentRBAC, ns("Service", "gpuvc-agent-metrics"))
	agent := append([]string{ns("DaemonSet", "gpuvc-agent")}, agentRBAC...)
	defaults := concat(core, pdb, metrics, certManager, agent)

	cases := map[string][]string{
		"defaults": defaults,
		"self-managed certificates": concat(core, pdb, metrics, agent,
			[]string{ns("Secret", "gpuvc-webhook-tls")}),
		"existing cluster issuer": concat(core, pdb, metrics, agent,
			[]string{ns("Certificate", "gpuvc-webhook")}),
		"agent off": concat(core, pdb, metrics, certManager),
		"simulated agents": concat(core, pdb, metrics, certManager, agentRBAC,
			[]string{ns("DaemonSet", "gpuvc-agent-a100"), ns("DaemonSet", "gpuvc-agent-h100")}),
		"one replica without leader election": concat(core, metrics, certManager, agent),
		"kind trial": concat(core, pdb, metrics, certManager, agentRBAC,
			[]string{ns("DaemonSet", "gpuvc-agent-a100")}),
		"metrics off":              concat(core, pdb, certManager, agent),
		"agent metrics off":        concat(core, pdb, metrics, certManager, agentRBACOnly, []string{ns("DaemonSet", "gpuvc-agent")}),
		"real nodes":               defaults,
		"platform vCluster values": concat(defaults, []string{ns("ConfigMap", "gpuvc-vcluster-values")}),
		"service monitor":          concat(defaults, []string{ns("ServiceMonitor", "gpuvc-manager")}),
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			got := mustRender(t, valueSets[name]).ids()
			if diff := cmp.Diff(sorted(want), sorted(got)); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStrictDecoding decodes every rendered object of a built-in kind into its Go
// type, refusing unknown fields, and checks namespaces and common labels.
func TestStrictDecoding(t *testing.T) {
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			for _, u := range mustRender(t, values) {
				gvk := u.GroupVersionKind()
				if clientgoscheme.Scheme.Recognizes(gvk) {
					obj, err := clientgoscheme.Scheme.New(gvk)
					if err != nil {
						t.Fatal(err)
					}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
						t.Errorf("%s: %v", id(u.GetKind(), u.GetNamespace(), u.GetName()), err)
					}
				} else if !slices.Contains([]string{"cert-manager.io", "monitoring.coreos.com"}, gvk.Group) {
					t.Errorf("%s: unexpected API group %q", u.GetKind(), gvk.Group)
				}
				scoped := !clusterScoped[u.GetKind()]
				if scoped != (u.GetNamespace() == testNamespace) {
					t.Errorf("%s %s: namespace %q (namespaced kind: %v)", u.GetKind(), u.GetName(), u.GetNamespace(), scoped)
				}
				for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
					if u.GetLabels()[k] == "" {
						t.Errorf("%s %s: no label %s", u.GetKind(), u.GetName(), k)
					}
				}
			}
		})
	}
}

var clusterScoped = map[string]bool{
	"ClusterRole": true, "ClusterRoleBinding": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

// TestSecurityContexts: every container runs as non-root on a read-only root
// filesystem without capabilities — except a privileged agent, when asked for.
func TestSecurityContexts(t *testing.T) {
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, values)
			privilegedAgent := strings.Contains(values, "privileged: true")
			for _, u := range m {
				var spec *corev1.PodSpec
				switch u.GetKind() {
				case "Deployment":
					spec = &get[appsv1.Deployment](t, m, u.GetKind(), u.GetName()).Spec.Template.Spec
				case "DaemonSet":
					spec = &get[appsv1.DaemonSet](t, m, u.GetKind(), u.GetName()).Spec.Template.Spec
				default:
					continue
				}
				if spec.HostNetwork || spec.HostPID || spec.HostIPC {
					t.Errorf("%s %s uses host namespaces", u.GetKind(), u.GetName())
				}
				devicePlugin := u.GetKind() == "DaemonSet" && strings.Contains(values, "devicePlugin: {enabled: true}")
				// A real-GPU agent with metrics reads the kubelet's pod-resources socket
				// (root-only), mounted read-only.
				podResources := false
				for _, v := range spec.Volumes {
					if u.GetKind() == "DaemonSet" && v.HostPath != nil && v.HostPath.Path == "/var/lib/kubelet/pod-resources" {
						podResources = true
						for _, vm := range spec.Containers[0].VolumeMounts {
							if vm.Name == v.Name && !vm.ReadOnly {
								t.Errorf("%s %s mounts the pod-resources folder writable", u.GetKind(), u.GetName())
							}
						}
						continue
					}
					// A real-GPU agent reads the NVIDIA toolkit's config.toml
					// folders, mounted read-only.
					if u.GetKind() == "DaemonSet" && v.HostPath != nil && strings.HasPrefix(v.Name, "toolkit-config-") {
						for _, vm := range spec.Containers[0].VolumeMounts {
							if vm.Name == v.Name && !vm.ReadOnly {
								t.Errorf("%s %s mounts the toolkit config folder %s writable", u.GetKind(), u.GetName(), v.HostPath.Path)
							}
						}
						continue
					}
					if v.HostPath != nil && !(devicePlugin && v.HostPath.Path == "/var/lib/kubelet/device-plugins") {
						t.Errorf("%s %s mounts host path %s", u.GetKind(), u.GetName(), v.HostPath.Path)
					}
				}
				for _, c := range spec.Containers {
					sc := c.SecurityContext
					if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
						t.Errorf("%s %s container %s: root filesystem not read-only", u.GetKind(), u.GetName(), c.Name)
					}
					if u.GetKind() == "DaemonSet" && privilegedAgent {
						if sc == nil || sc.Privileged == nil || !*sc.Privileged {
							t.Errorf("agent asked to be privileged is not")
						}
						continue
					}
					if sc.Privileged != nil && *sc.Privileged {
						t.Errorf("%s %s container %s is privileged", u.GetKind(), u.GetName(), c.Name)
					}
					if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
						t.Errorf("%s %s container %s allows privilege escalation", u.GetKind(), u.GetName(), c.Name)
					}
					if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
						t.Errorf("%s %s container %s capabilities %+v: want drop ALL", u.GetKind(), u.GetName(), c.Name, sc.Capabilities)
					}
					psc := spec.SecurityContext
					if devicePlugin || podResources {
						if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 0 || psc.SeccompProfile == nil {
							t.Errorf("device-plugin or pod-resources agent: pod security context %+v: want root with RuntimeDefault seccomp", psc)
						}
						continue
					}
					if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
						t.Errorf("%s %s: pod security context %+v: want runAsNonRoot and RuntimeDefault seccomp", u.GetKind(), u.GetName(), psc)
					}
				}
			}
		})
	}
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
