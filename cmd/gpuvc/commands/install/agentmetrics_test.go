package install_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	managercmd "github.com/gpuvc/gpuvc/cmd/gpuvc/commands/manager"
	"github.com/gpuvc/gpuvc/manager/agentmetrics"
)

// TestInstallWiresAgentMetricsToTheManager: what `gpuvc install` installs lets
// the manager apply spec.idle.gpuPods: the manager's own flag parsing reads
// --agent-metrics-port as agent.metrics.port, the port the agents serve
// /metrics on (a container port named metrics) and the headless Service
// gpuvc-agent-metrics publishes; the agents' namespace comes from the
// manager's POD_NAMESPACE (--agent-namespace's default, which the chart does
// not override); the manager's agent
// selector matches the agent pods. With agent.metrics off there is neither
// flag nor Service.
func TestInstallWiresAgentMetricsToTheManager(t *testing.T) {
	for name, tc := range map[string]struct {
		set  []string
		port int32 // 0: agent metrics off
	}{
		"defaults":          {nil, 9402},
		"port set":          {[]string{"agent.metrics.port=9555"}, 9555},
		"simulated GPUs":    {[]string{"agent.simulate.a100=product=NVIDIA-A100-SXM4-80GB\\,count=8"}, 9402},
		"agent metrics off": {[]string{"agent.metrics.enabled=false"}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"--kubeconfig", noCluster, "install", "--dry-run"}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			r := gpuvc(t, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			m := parseManifest(t, r.out)

			mgr := m.deployment(t, "gpuvc-manager").Spec.Template.Spec.Containers[0]
			t.Setenv("POD_NAMESPACE", "gpu-ops") // what the downward API gives the manager pod
			flags := managercmd.NewCommand(cli.Streams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, &cli.Globals{}).Flags()
			if err := flags.Parse(mgr.Args[1:]); err != nil {
				t.Fatalf("gpuvc manager refuses %q: %v", mgr.Args[1:], err)
			}
			if got := flags.Lookup("agent-metrics-port").Value.String(); got != fmt.Sprint(tc.port) {
				t.Errorf("the manager reads --agent-metrics-port %s, want %d (args %q)", got, tc.port, mgr.Args)
			}
			if got := flags.Lookup("agent-namespace").Value.String(); got != "gpu-ops" {
				t.Errorf("the manager looks for the agents in namespace %q, want its own (POD_NAMESPACE gpu-ops)", got)
			}
			svc, hasSvc := m.services["gpuvc-agent-metrics"]
			if tc.port == 0 {
				if hasSvc {
					t.Error("agent metrics off, yet Service gpuvc-agent-metrics is rendered")
				}
				return
			}
			if !slices.ContainsFunc(mgr.Env, func(e corev1.EnvVar) bool {
				return e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace"
			}) {
				t.Errorf("the manager has no POD_NAMESPACE from its own namespace (--agent-namespace's default): %+v", mgr.Env)
			}
			if len(m.daemonSets) == 0 {
				t.Fatal("no agent DaemonSet")
			}
			for _, ds := range m.daemonSets {
				pod := ds.Spec.Template
				if ds.Namespace != "" && ds.Namespace != installer.DefaultNamespace {
					t.Errorf("DaemonSet %s in namespace %s, not the manager's", ds.Name, ds.Namespace)
				}
				if !agentmetrics.AgentSelector.Matches(labels.Set(pod.Labels)) {
					t.Errorf("the manager's agent selector %s does not match DaemonSet %s's pods %v", agentmetrics.AgentSelector, ds.Name, pod.Labels)
				}
				if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
					t.Errorf("Service gpuvc-agent-metrics selects %v, not DaemonSet %s's pods %v", svc.Spec.Selector, ds.Name, pod.Labels)
				}
				c := pod.Spec.Containers[0]
				if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == tc.port }) ||
					!slices.Contains(c.Args, fmt.Sprintf("--metrics-bind-address=:%d", tc.port)) {
					t.Errorf("DaemonSet %s does not serve metrics on %d: ports %+v, args %q", ds.Name, tc.port, c.Ports, c.Args)
				}
			}
			if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != tc.port || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
				t.Errorf("Service gpuvc-agent-metrics %+v: want headless, %d -> metrics", svc.Spec, tc.port)
			}
		})
	}
}

type manifest struct {
	deployments map[string]*appsv1.Deployment
	daemonSets  []*appsv1.DaemonSet
	services    map[string]*corev1.Service
}

func parseManifest(t *testing.T, out string) manifest {
	t.Helper()
	m := manifest{deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{}}
	for _, doc := range releaseutil.SplitManifests(out) {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered document: %v\n%s", err, doc)
		}
		var err error
		switch head.Kind {
		case "Deployment":
			d := &appsv1.Deployment{}
			err = yaml.UnmarshalStrict([]byte(doc), d)
			m.deployments[d.Name] = d
		case "DaemonSet":
			d := &appsv1.DaemonSet{}
			err = yaml.UnmarshalStrict([]byte(doc), d)
			if strings.HasPrefix(d.Name, "gpuvc-agent") {
				m.daemonSets = append(m.daemonSets, d)
			}
		case "Service":
			s := &corev1.Service{}
			err = yaml.UnmarshalStrict([]byte(doc), s)
			m.services[s.Name] = s
		}
		if err != nil {
			t.Fatalf("%s: %v", head.Kind, err)
		}
	}
	return m
}

func (m manifest) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d, ok := m.deployments[name]
	if !ok || len(d.Spec.Template.Spec.Containers) == 0 {
		t.Fatalf("no Deployment %s with a container in what gpuvc install renders", name)
	}
	return d
}
