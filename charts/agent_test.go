package charts

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// agentFlags are the flags `gpuvc agent` accepts.
var agentFlags = []string{"--node-name", "--interval", "--simulate", "--mig-strategy", "--gfd", "--device-plugin", "--device-plugin-dir", "--gpu-failure", "--gpu-probation", "--gpu-max-failures", "--gpu-failure-node-taint", "--metrics-bind-address", "--pod-resources-socket",
	"--gpu-runtime", "--host-root", "--nvidia-toolkit-config", "--device-list-strategy"}

// toolkitConfigs are agent.gpuRuntime.toolkitConfigs by default, toolkitDirs
// their folders.
var (
	toolkitConfigs = []string{"/etc/nvidia-container-runtime/config.toml", "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"}
	toolkitDirs    = []string{"/etc/nvidia-container-runtime", "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime"}
)

func TestAgentDaemonSets(t *testing.T) {
	defaultTolerations := []corev1.Toleration{
		// Always: the agent lifts its own taints.
		{Key: "gpuvc.dev/gpu-runtime-unsafe", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpuvc.dev/gpu-unhealthy", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpuvc.dev/pool", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	type ds struct {
		args         []string
		nodeSelector map[string]string
		nvidiaEnv    bool
		runtimeClass string
		devicePlugin bool
		podResources bool     // the kubelet's pod-resources folder, read-only
		toolkit      []string // the toolkit config folders, read-only under /host
		metricsPort  int32    // a container port named metrics; 0: none
	}
	cases := map[string]map[string]ds{
		"defaults": {"gpuvc-agent": {args: []string{"--node-name=$(NODE_NAME)", "--interval=1m", "--mig-strategy=mixed", "--gfd=auto", "--gpu-failure=taint", "--gpu-probation=10m", "--gpu-max-failures=3", "--gpu-failure-node-taint=all",
			"--gpu-runtime=fence", "--host-root=/host", "--nvidia-toolkit-config=" + strings.Join(toolkitConfigs, ","),
			"--metrics-bind-address=:9402", "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"}, nvidiaEnv: true, podResources: true, metricsPort: 9402, toolkit: toolkitDirs}},
		"agent metrics off": {"gpuvc-agent": {args: []string{"--node-name=$(NODE_NAME)", "--interval=1m", "--mig-strategy=mixed", "--gfd=auto", "--gpu-failure=taint", "--gpu-probation=10m", "--gpu-max-failures=3", "--gpu-failure-node-taint=all",
			"--gpu-runtime=fence", "--host-root=/host", "--nvidia-toolkit-config=" + strings.Join(toolkitConfigs, ",")}, nvidiaEnv: true, toolkit: toolkitDirs}},
		"simulated agents": {
			"gpuvc-agent-a100": {
				args:         []string{"--node-name=$(NODE_NAME)", "--interval=1m", "--mig-strategy=mixed", "--gfd=auto", "--gpu-failure=taint", "--gpu-probation=10m", "--gpu-max-failures=3", "--gpu-failure-node-taint=all", "--gpu-runtime=fence", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=8", "--metrics-bind-address=:9402"},
				nodeSelector: map[string]string{"gpuvc.dev/pool": "a100"}, metricsPort: 9402,
			},
			"gpuvc-agent-h100": {
				args:         []string{"--node-name=$(NODE_NAME)", "--interval=1m", "--mig-strategy=mixed", "--gfd=auto", "--gpu-failure=taint", "--gpu-probation=10m", "--gpu-max-failures=3", "--gpu-failure-node-taint=all", "--gpu-runtime=fence", "--simulate=product=NVIDIA-H100-80GB-HBM3,count=8", "--metrics-bind-address=:9402"},
				nodeSelector: map[string]string{"gpuvc.dev/pool": "h100"}, metricsPort: 9402,
			},
		},
		"everything set": {"gpuvc-agent": {
			args: []string{"--node-name=$(NODE_NAME)", "--interval=30s", "--mig-strategy=mixed", "--gfd=auto", "--gpu-failure=taint", "--gpu-probation=10m", "--gpu-max-failures=3", "--gpu-failure-node-taint=all",
				"--gpu-runtime=warn", "--host-root=/host", "--nvidia-toolkit-config=/etc/nvidia-container-runtime/config.toml", "--device-list-strategy=volume-mounts",
				"--metrics-bind-address=:9500", "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"},
			nodeSelector: map[string]string{"nvidia.com/gpu.present": "true"},
			nvidiaEnv:    true, runtimeClass: "nvidia", podResources: true, metricsPort: 9500, toolkit: []string{"/etc/nvidia-container-runtime"},
		}},
		"agent off": {},
		"kind trial": {"gpuvc-agent-a100": {
			args: []string{"--node-name=$(NODE_NAME)", "--interval=1m", "--mig-strategy=mixed", "--gfd=auto", "--gpu-failure=taint", "--gpu-probation=10m", "--gpu-max-failures=3", "--gpu-failure-node-taint=all", "--gpu-runtime=fence",
				"--simulate=product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-balanced",
				"--device-plugin", "--device-plugin-dir=/var/lib/kubelet/device-plugins", "--metrics-bind-address=:9402"},
			nodeSelector: map[string]string{"gpuvc.dev/pool": "a100"},
			devicePlugin: true, metricsPort: 9402,
		}},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, valueSets[name])
			var got []string
			for _, u := range m {
				if u.GetKind() == "DaemonSet" {
					got = append(got, u.GetName())
				}
			}
			var names []string
			for n := range want {
				names = append(names, n)
			}
			if diff := cmp.Diff(sorted(names), sorted(got)); diff != "" {
				t.Fatalf("DaemonSets (-want +got):\n%s", diff)
			}
			var selectors []string
			for dsName, w := range want {
				d := get[appsv1.DaemonSet](t, m, "DaemonSet", dsName)
				pod := d.Spec.Template.Spec
				if pod.ServiceAccountName != AgentServiceAccount {
					t.Errorf("%s: service account %q", dsName, pod.ServiceAccountName)
				}
				if pod.HostNetwork || pod.HostPID || pod.HostIPC {
					t.Errorf("%s: the agent must not use host namespaces", dsName)
				}
				var volumes []string
				for _, v := range pod.Volumes {
					if v.HostPath != nil {
						volumes = append(volumes, v.HostPath.Path)
					}
				}
				var wantVolumes []string
				if w.devicePlugin {
					wantVolumes = append(wantVolumes, "/var/lib/kubelet/device-plugins")
				}
				if w.podResources {
					wantVolumes = append(wantVolumes, "/var/lib/kubelet/pod-resources")
				}
				wantVolumes = append(wantVolumes, w.toolkit...)
				if diff := cmp.Diff(wantVolumes, volumes); diff != "" || len(pod.Volumes) != len(wantVolumes) {
					t.Errorf("%s: host paths (-want +got):\n%s", dsName, diff)
				}
				c := pod.Containers[0]
				var toolkitMounts []string
				for _, vm := range c.VolumeMounts {
					if strings.HasPrefix(vm.Name, "toolkit-config-") {
						if !vm.ReadOnly {
							t.Errorf("%s: %s is mounted writable", dsName, vm.MountPath)
						}
						toolkitMounts = append(toolkitMounts, strings.TrimPrefix(vm.MountPath, "/host"))
					}
				}
				if diff := cmp.Diff(w.toolkit, toolkitMounts); diff != "" {
					t.Errorf("%s: toolkit config mounts under /host (-want +got):\n%s", dsName, diff)
				}
				var metricsPort int32
				for _, p := range c.Ports {
					if p.Name == "metrics" {
						metricsPort = p.ContainerPort
					}
				}
				if metricsPort != w.metricsPort {
					t.Errorf("%s: container port metrics %d, want %d", dsName, metricsPort, w.metricsPort)
				}
				if c.Args[0] != "agent" {
					t.Errorf("%s: args %q: want the agent role first", dsName, c.Args)
				}
				if diff := cmp.Diff(w.args, c.Args[1:]); diff != "" {
					t.Errorf("%s: agent flags (-want +got):\n%s", dsName, diff)
				}
				for _, a := range c.Args[1:] {
					flag, _, _ := strings.Cut(a, "=")
					if !slices.Contains(agentFlags, flag) {
						t.Errorf("%s: flag %s is not one `gpuvc agent` accepts", dsName, flag)
					}
				}
				env := map[string]corev1.EnvVar{}
				for _, e := range c.Env {
					env[e.Name] = e
				}
				if f := env["NODE_NAME"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "spec.nodeName" {
					t.Errorf("%s: NODE_NAME %+v: want the downward API's spec.nodeName", dsName, env["NODE_NAME"])
				}
				if got := env["NVIDIA_VISIBLE_DEVICES"].Value == "all" && env["NVIDIA_DRIVER_CAPABILITIES"].Value == "utility"; got != w.nvidiaEnv {
					t.Errorf("%s: NVIDIA runtime variables present: %v, want %v", dsName, got, w.nvidiaEnv)
				}
				if pod.RuntimeClassName != nil && *pod.RuntimeClassName != w.runtimeClass || pod.RuntimeClassName == nil && w.runtimeClass != "" {
					t.Errorf("%s: runtimeClassName %v, want %q", dsName, pod.RuntimeClassName, w.runtimeClass)
				}
				if diff := cmp.Diff(w.nodeSelector, pod.NodeSelector); diff != "" {
					t.Errorf("%s: nodeSelector (-want +got):\n%s", dsName, diff)
				}
				if diff := cmp.Diff(defaultTolerations, pod.Tolerations); diff != "" {
					t.Errorf("%s: tolerations (-want +got):\n%s", dsName, diff)
				}
				terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
				wantTerms := []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "gpuvc.dev/pool", Operator: corev1.NodeSelectorOpExists},
					{Key: "gpuvc.dev/pool", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"system"}},
				}}}
				if diff := cmp.Diff(wantTerms, terms); diff != "" {
					t.Errorf("%s: node affinity (-want +got):\n%s", dsName, diff)
				}
				for k, v := range d.Spec.Selector.MatchLabels {
					if d.Spec.Template.Labels[k] != v {
						t.Errorf("%s: selector %s=%s does not match its pods", dsName, k, v)
					}
				}
				selectors = append(selectors, cmp.Diff(nil, d.Spec.Selector.MatchLabels))
			}
			if len(selectors) != len(uniq(selectors)) {
				t.Errorf("DaemonSets share a selector: %v", selectors)
			}
		})
	}
}

func uniq(s []string) []string {
	s = sorted(s)
	return slices.Compact(s)
}
