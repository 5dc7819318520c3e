package charts

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/manager/agentmetrics"
)

// managerFlags are the flags `gpuvc manager` accepts; the chart must pass no other.
var managerFlags = []string{
	"--metrics-bind-address", "--health-probe-bind-address", "--leader-elect",
	"--leader-election-namespace", "--webhook-port", "--webhook-cert-dir",
	"--vcluster-chart-repo", "--vcluster-chart-version", "--vcluster-chart-dir",
	"--team-server-url", "--control-plane-pool", "--system-pool", "--reserve-image", "--team-workers",
	"--ephemeral-vclusters", "--sync-real-nodes", "--webhook-cert-secret", "--vcluster-values",
	"--agent-metrics-port", "--kueue-user", "--not-queued-after", "--vcluster-metrics-proxy",
	"--usage-history-pool", "--accounting-deleted-team-retention", "--host-storage-classes",
	"--agent-metrics-address",
}

const defaultImage = "ghcr.io/gpuvc/gpuvc:0.1.0"

func managerContainer(t *testing.T, m manifests) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	d := get[appsv1.Deployment](t, m, "Deployment", "gpuvc-manager")
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("manager pod has %d containers, want 1", n)
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

func TestManagerArgs(t *testing.T) {
	common := []string{
		"--health-probe-bind-address=:8081",
		"--webhook-port=9443",
		"--webhook-cert-dir=" + WebhookCertDir,
		"--agent-metrics-port=9402",
	}
	leader := []string{"--leader-elect", "--leader-election-namespace=" + testNamespace}
	chart := []string{"--vcluster-chart-repo=https://charts.loft.sh", "--vcluster-chart-version=0.36.1", "--vcluster-metrics-proxy=auto"}
	cases := map[string]struct {
		image string
		args  []string
	}{
		"defaults": {defaultImage, concat(common, leader, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage})},
		"self-managed certificates": {defaultImage, concat(common, leader, chart, []string{
			"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage,
			"--webhook-cert-secret=" + testNamespace + "/" + WebhookSecretName,
		})},
		"kind trial": {defaultImage, concat(common, leader, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage, "--ephemeral-vclusters"})},
		"real nodes": {defaultImage, concat(common, leader, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage, "--sync-real-nodes"})},
		"host storage classes": {defaultImage, concat(common, leader, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage, "--host-storage-classes"})},
		"platform vCluster values": {defaultImage, concat(common, leader, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage, "--vcluster-values=/etc/gpuvc/vcluster-values.yaml"})},
		"one replica without leader election": {defaultImage, concat(common, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage})},
		"metrics off": {defaultImage, concat(common, leader, chart,
			[]string{"--metrics-bind-address=0", "--reserve-image=" + defaultImage})},
		"custom images": {"registry.example.com:5000/platform/gpuvc:v1.2.3", concat(common, leader, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=registry.example.com:5000/platform/gpuvc-reserve:v1.2.3"})},
		"image by digest": {"ghcr.io/gpuvc/gpuvc@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", concat(common, leader, chart,
			[]string{"--metrics-bind-address=:8080", "--reserve-image=ghcr.io/gpuvc/gpuvc@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})},
		"everything set": {defaultImage, concat(leader, []string{
			"--metrics-bind-address=:9090",
			"--health-probe-bind-address=:8081",
			"--webhook-port=10250",
			"--webhook-cert-dir=" + WebhookCertDir,
			"--vcluster-chart-dir=/charts/vcluster",
			"--vcluster-chart-version=0.36.0",
			"--vcluster-metrics-proxy=off",
			"--team-server-url=https://{{.Team}}.vc.example.com",
			"--team-workers=8",
			"--control-plane-pool=system",
			"--system-pool=system",
			"--kueue-user=system:serviceaccount:kueue:kueue,admin:kueue",
			"--usage-history-pool=a100,h100",
			"--not-queued-after=2m",
			"--accounting-deleted-team-retention=720h",
			"--reserve-image=" + defaultImage,
			"--agent-metrics-port=9500",
		})},
		// A node's own agent daemon (the local stack's real node): scraped with
		// the agent DaemonSet off.
		"node agent outside the chart": {defaultImage, concat(leader, chart, []string{
			"--health-probe-bind-address=:8081", "--webhook-port=9443", "--webhook-cert-dir=" + WebhookCertDir,
			"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage,
			"--agent-metrics-address=10.88.0.1:9402",
		})},
		"agent metrics off": {defaultImage, concat(leader, chart, []string{
			"--health-probe-bind-address=:8081", "--webhook-port=9443", "--webhook-cert-dir=" + WebhookCertDir,
			"--metrics-bind-address=:8080", "--reserve-image=" + defaultImage,
		})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, c := managerContainer(t, mustRender(t, valueSets[name]))
			if c.Image != tc.image {
				t.Errorf("image %q, want %q", c.Image, tc.image)
			}
			if len(c.Args) == 0 || c.Args[0] != "manager" {
				t.Fatalf("args %q: want the manager role first", c.Args)
			}
			if diff := cmp.Diff(sorted(tc.args), sorted(c.Args[1:])); diff != "" {
				t.Errorf("manager flags (-want +got):\n%s", diff)
			}
			seen := map[string]bool{}
			for _, a := range c.Args[1:] {
				flag, _, _ := strings.Cut(a, "=")
				if !slices.Contains(managerFlags, flag) {
					t.Errorf("flag %s is not one `gpuvc manager` accepts", flag)
				}
				if seen[flag] {
					t.Errorf("flag %s given twice", flag)
				}
				seen[flag] = true
			}
		})
	}
}

// TestManagerPod checks what the flags rely on: ports, probes, the certificate
// mount (cert-manager's Secret, or the folder the manager writes), the writable
// /tmp, replicas.
func TestManagerPod(t *testing.T) {
	cases := map[string]struct {
		replicas                     int32
		webhookPort, healthPort      int32
		metricsPort                  int32 // 0: no metrics port
		pullPolicy                   corev1.PullPolicy
		pullSecrets                  []string
		nodeSelector                 map[string]string
		antiAffinity, extraVolume    bool
		selfManagedCerts             bool
		priorityClass                string
		memoryLimitFromResourceField bool
	}{
		"defaults": {replicas: 2, webhookPort: 9443, healthPort: 8081, metricsPort: 8080,
			pullPolicy: corev1.PullIfNotPresent, antiAffinity: true, memoryLimitFromResourceField: true},
		"self-managed certificates": {replicas: 2, webhookPort: 9443, healthPort: 8081, metricsPort: 8080,
			pullPolicy: corev1.PullIfNotPresent, antiAffinity: true, memoryLimitFromResourceField: true, selfManagedCerts: true},
		"one replica without leader election": {replicas: 1, webhookPort: 9443, healthPort: 8081, metricsPort: 8080,
			pullPolicy: corev1.PullIfNotPresent, antiAffinity: true, memoryLimitFromResourceField: true},
		"metrics off": {replicas: 2, webhookPort: 9443, healthPort: 8081,
			pullPolicy: corev1.PullIfNotPresent, antiAffinity: true, memoryLimitFromResourceField: true},
		"custom images": {replicas: 2, webhookPort: 9443, healthPort: 8081, metricsPort: 8080,
			pullPolicy: corev1.PullAlways, pullSecrets: []string{"regcred"}, antiAffinity: true, memoryLimitFromResourceField: true},
		"everything set": {replicas: 3, webhookPort: 10250, healthPort: 8081, metricsPort: 9090,
			pullPolicy: corev1.PullIfNotPresent, nodeSelector: map[string]string{"gpuvc.dev/pool": "system"},
			extraVolume: true, priorityClass: "platform-critical", memoryLimitFromResourceField: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, c := managerContainer(t, mustRender(t, valueSets[name]))
			pod := d.Spec.Template.Spec
			if got := *d.Spec.Replicas; got != tc.replicas {
				t.Errorf("replicas %d, want %d", got, tc.replicas)
			}
			if pod.ServiceAccountName != ManagerServiceAccount {
				t.Errorf("service account %q", pod.ServiceAccountName)
			}
			if c.ImagePullPolicy != tc.pullPolicy {
				t.Errorf("pull policy %q, want %q", c.ImagePullPolicy, tc.pullPolicy)
			}
			var secrets []string
			for _, s := range pod.ImagePullSecrets {
				secrets = append(secrets, s.Name)
			}
			if !slices.Equal(secrets, tc.pullSecrets) {
				t.Errorf("image pull secrets %v, want %v", secrets, tc.pullSecrets)
			}
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			want := map[string]int32{"webhook": tc.webhookPort, "health": tc.healthPort}
			if tc.metricsPort != 0 {
				want["metrics"] = tc.metricsPort
			}
			if diff := cmp.Diff(want, ports); diff != "" {
				t.Errorf("container ports (-want +got):\n%s", diff)
			}
			for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
				if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "health" {
					t.Errorf("probe %+v: want GET %s on the health port", probe, path)
				}
			}
			mounts := map[string]corev1.VolumeMount{}
			for _, m := range c.VolumeMounts {
				mounts[m.MountPath] = m
			}
			volumes := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				volumes[v.Name] = v
			}
			// cert-manager's Secret is mounted read-only; a self-managed certificate
			// is copied by the manager into a writable memory-backed emptyDir.
			certs, ok := mounts[WebhookCertDir]
			if !ok || certs.ReadOnly == tc.selfManagedCerts {
				t.Fatalf("mount at %s: %+v, want one read-only exactly with cert-manager", WebhookCertDir, c.VolumeMounts)
			}
			switch v := volumes[certs.Name]; {
			case tc.selfManagedCerts && (v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.Secret != nil):
				t.Errorf("certificate volume %+v: want a memory-backed emptyDir", v)
			case !tc.selfManagedCerts && (v.Secret == nil || v.Secret.SecretName != WebhookSecretName):
				t.Errorf("certificate volume %+v: want Secret %s", v, WebhookSecretName)
			}
			if v := volumes[mounts["/tmp"].Name]; v.EmptyDir == nil {
				t.Errorf("/tmp is not an emptyDir (the root filesystem is read-only): %+v", v)
			}
			if _, ok := volumes["vcluster-chart"]; ok != tc.extraVolume {
				t.Errorf("extra volume present: %v, want %v", ok, tc.extraVolume)
			}
			if _, ok := mounts["/charts/vcluster"]; ok != tc.extraVolume {
				t.Errorf("extra volume mount present: %v, want %v", ok, tc.extraVolume)
			}
			if diff := cmp.Diff(tc.nodeSelector, pod.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if got := pod.Affinity != nil && pod.Affinity.PodAntiAffinity != nil; got != tc.antiAffinity {
				t.Errorf("default anti-affinity: %v, want %v", got, tc.antiAffinity)
			}
			if pod.PriorityClassName != tc.priorityClass {
				t.Errorf("priority class %q, want %q", pod.PriorityClassName, tc.priorityClass)
			}
			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			if env["HOME"].Value != "/tmp" {
				t.Errorf("HOME=%q: Helm needs a writable home", env["HOME"].Value)
			}
			if f := env["POD_NAMESPACE"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE not from the downward API: %+v", env["POD_NAMESPACE"])
			}
			if f := env["GOMEMLIMIT"].ValueFrom; (f != nil && f.ResourceFieldRef != nil && f.ResourceFieldRef.Resource == "limits.memory") != tc.memoryLimitFromResourceField {
				t.Errorf("GOMEMLIMIT %+v", env["GOMEMLIMIT"])
			}
		})
	}
}

// TestServices: the webhook Service forwards 443 to the webhook port by name, the
// metrics Service exists only with metrics.
func TestServices(t *testing.T) {
	m := mustRender(t, valueSets["everything set"])
	d, _ := managerContainer(t, m)
	svc := get[corev1.Service](t, m, "Service", WebhookServiceName)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.String() != "webhook" {
		t.Errorf("webhook service ports %+v: want 443 -> webhook", svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("webhook service selects %s=%s, which the manager pods lack", k, v)
		}
	}
	metrics := get[corev1.Service](t, m, "Service", "gpuvc-metrics")
	if len(metrics.Spec.Ports) != 1 || metrics.Spec.Ports[0].Port != 9090 || metrics.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("metrics service ports %+v: want 9090 -> metrics", metrics.Spec.Ports)
	}

	// The agents' Service is headless (an endpoint per agent for Prometheus) and
	// selects the agent pods by the labels the manager finds them by.
	agents := get[corev1.Service](t, m, "Service", "gpuvc-agent-metrics")
	if agents.Spec.ClusterIP != corev1.ClusterIPNone || len(agents.Spec.Ports) != 1 || agents.Spec.Ports[0].Port != 9500 || agents.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("agent metrics service %+v: want headless, 9500 -> metrics", agents.Spec)
	}
	ds := get[appsv1.DaemonSet](t, m, "DaemonSet", "gpuvc-agent")
	for k, v := range agents.Spec.Selector {
		if ds.Spec.Template.Labels[k] != v {
			t.Errorf("agent metrics service selects %s=%s, which the agent pods lack", k, v)
		}
	}
	if !agentmetrics.AgentSelector.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("the manager's agent selector %s does not match the agent pods' labels %v", agentmetrics.AgentSelector, ds.Spec.Template.Labels)
	}

	sm := mustRender(t, valueSets["service monitor"]).find("ServiceMonitor", "gpuvc-manager")
	if sm == nil {
		t.Fatal("no ServiceMonitor")
	}
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v: want the extra label release=prometheus", sm.GetLabels())
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	mm := mustRender(t, valueSets["service monitor"])
	for k, v := range sel {
		if get[corev1.Service](t, mm, "Service", "gpuvc-metrics").Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v, which the metrics Service lacks", k, v)
		}
		if get[corev1.Service](t, mm, "Service", "gpuvc-agent-metrics").Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%v, which the agents' metrics Service lacks", k, v)
		}
		if k == "gpuvc.dev/metrics" && get[corev1.Service](t, mm, "Service", WebhookServiceName).Labels[k] == v {
			t.Error("ServiceMonitor would also select the webhook Service")
		}
	}
}

// TestRenderRefusesPortClash: checks the schema cannot express fail at render time
// with a message naming the values.
func TestRenderRefusesPortClash(t *testing.T) {
	for values, want := range map[string]string{
		`agent: {devicePlugin: {enabled: true}}`:                     "agent.devicePlugin.enabled serves simulated GPUs only",
		`metrics: {port: 9443}`:                                      "webhook.port, manager.healthPort and metrics.port must differ",
		`manager: {healthPort: 9443}`:                                "webhook.port, manager.healthPort and metrics.port must differ",
		`metrics: {enabled: false, serviceMonitor: {enabled: true}}`: "metrics.serviceMonitor.enabled needs metrics.enabled",
	} {
		_, err := render(values)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("values %s: error %v, want one containing %q", values, err, want)
		}
	}
}

// TestPlatformVClusterValues: vcluster.values reach the manager as the file
// --vcluster-values names, from a ConfigMap, and changing them rolls the pods.
func TestPlatformVClusterValues(t *testing.T) {
	m := mustRender(t, valueSets["platform vCluster values"])
	cm := get[corev1.ConfigMap](t, m, "ConfigMap", "gpuvc-vcluster-values")
	var values map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["vcluster-values.yaml"]), &values); err != nil {
		t.Fatalf("vcluster-values.yaml: %v", err)
	}
	want := map[string]any{"controlPlane": map[string]any{"distro": map[string]any{"k8s": map[string]any{"image": map[string]any{"tag": "v1.36.3"}}}}}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("values in the ConfigMap (-want +got):\n%s", diff)
	}
	d, c := managerContainer(t, m)
	var mounted bool
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == "/etc/gpuvc" {
			mounted = vm.ReadOnly
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == vm.Name && (v.ConfigMap == nil || v.ConfigMap.Name != cm.Name) {
					t.Errorf("volume %s is not the ConfigMap %s: %+v", v.Name, cm.Name, v.VolumeSource)
				}
			}
		}
	}
	if !mounted {
		t.Errorf("no read-only mount at /etc/gpuvc: %+v", c.VolumeMounts)
	}
	checksum := d.Spec.Template.Annotations["checksum/vcluster-values"]
	d2, _ := managerContainer(t, mustRender(t, "vcluster: {values: {controlPlane: {distro: {k8s: {image: {tag: v1.36.4}}}}}}"))
	if checksum == "" || checksum == d2.Spec.Template.Annotations["checksum/vcluster-values"] {
		t.Errorf("checksum annotation %q does not follow the values", checksum)
	}
	if _, ok := get[appsv1.Deployment](t, mustRender(t, ""), "Deployment", "gpuvc-manager").Spec.Template.Annotations["checksum/vcluster-values"]; ok {
		t.Error("checksum annotation without values")
	}
}
