package kindnode

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// containerd's configuration is read by kind where kind reads it (the
// snapshotter of config version 3, before loading images) and keeps what this
// project's machines need: systemd cgroups like kind's kubelet configuration,
// restrict_oom_score_adj without CAP_SYS_RESOURCE, the preloaded sandbox image.
func TestContainerdConfigIsWhatKindAndTheKubeletExpect(t *testing.T) {
	b, err := containerdConfig("registry.k8s.io/pause:3.10")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version int
		GRPC    struct{ Address string }
		Plugins map[string]map[string]any
	}
	if _, err := toml.Decode(string(b), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if cfg.Version != 3 || cfg.GRPC.Address != "/run/containerd/containerd.sock" {
		t.Errorf("version %d, socket %q; kind reads version 3 and kubeadm's criSocket is /run/containerd/containerd.sock", cfg.Version, cfg.GRPC.Address)
	}
	images, rt := cfg.Plugins["io.containerd.cri.v1.images"], cfg.Plugins["io.containerd.cri.v1.runtime"]
	if images["snapshotter"] != "overlayfs" {
		t.Errorf("snapshotter %v, want overlayfs where kind reads it", images["snapshotter"])
	}
	if rt["restrict_oom_score_adj"] != true {
		t.Error("restrict_oom_score_adj is not on: sandboxes fail without CAP_SYS_RESOURCE")
	}
	if !strings.Contains(string(b), "SystemdCgroup = true") {
		t.Errorf("runc does not use systemd cgroups, as kind's kubelet (cgroupDriver systemd) does:\n%s", b)
	}
	if pinned, _ := images["pinned_images"].(map[string]any); pinned["sandbox"] != "registry.k8s.io/pause:3.10" {
		t.Errorf("sandbox image %v, want the preloaded pause", pinned["sandbox"])
	}
}

// kind patches CONTROL_PLANE_ENDPOINT into the first container of every
// DaemonSet of the manifest only when it carries kind's marker, and the
// DaemonSets (the pod network and the NetworkPolicy controller) run on every
// node (the control plane and the GPU pools are tainted).
func TestCNIManifestIsPatchableAndRunsEverywhere(t *testing.T) {
	m := defaultCNIManifest()
	if !strings.Contains(m, "would you kindly patch this file") {
		t.Fatal("manifest lacks kind's patch marker: CONTROL_PLANE_ENDPOINT would be missing")
	}
	var names []string
	for _, ds := range manifestDocs(t, m, "DaemonSet") {
		names = append(names, ds.Metadata.Name)
		s := ds.Spec.Template.Spec
		if !s.HostNetwork || len(s.Containers) != 1 || s.Containers[0].Image != toolsRef || len(s.Containers[0].Env) == 0 {
			t.Errorf("DaemonSet %s not as kind patches it (host network, one container with an env list, the tools image): %+v", ds.Metadata.Name, ds)
		}
		if len(s.Tolerations) != 1 || s.Tolerations[0]["operator"] != "Exists" {
			t.Errorf("DaemonSet %s tolerations %v: it must tolerate every taint", ds.Metadata.Name, s.Tolerations)
		}
	}
	if diff := cmp.Diff([]string{"gpuvc-kind-cni", "gpuvc-kind-netpol"}, names); diff != "" {
		t.Errorf("DaemonSets (-want +got):\n%s", diff)
	}
}

// The NetworkPolicy DaemonSet runs kube-router's firewall alone, against the
// control plane kind names, as a ServiceAccount allowed to read policies.
func TestNetworkPolicyControllerRunsKubeRouterFirewallOnly(t *testing.T) {
	m := defaultCNIManifest()
	var ds manifestDoc
	for _, d := range manifestDocs(t, m, "DaemonSet") {
		if d.Metadata.Name == "gpuvc-kind-netpol" {
			ds = d
		}
	}
	c := ds.Spec.Template.Spec.Containers
	if len(c) != 1 {
		t.Fatalf("gpuvc-kind-netpol has %d containers, want 1", len(c))
	}
	cmd := strings.Join(c[0].Command, " ")
	for _, want := range []string{"exec kube-router", "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
		`--hostname-override="$NODE_NAME"`, `KUBERNETES_SERVICE_HOST="${CONTROL_PLANE_ENDPOINT%:*}"`} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command lacks %q: %s", want, cmd)
		}
	}
	if !c[0].SecurityContext.Privileged {
		t.Error("kube-router writes the node's iptables and ipsets: it must be privileged")
	}
	if ds.Spec.Template.Spec.ServiceAccountName != "gpuvc-kind-netpol" {
		t.Errorf("service account %q", ds.Spec.Template.Spec.ServiceAccountName)
	}
	if !strings.Contains(m, "resources: [networkpolicies]") || !strings.Contains(m, "name: gpuvc-kind-netpol\n  namespace: kube-system\n") {
		t.Error("the ClusterRole does not let gpuvc-kind-netpol read NetworkPolicies")
	}
}

type manifestDoc struct {
	Kind     string
	Metadata struct{ Name string }
	Spec     struct {
		Template struct {
			Spec struct {
				HostNetwork        bool   `json:"hostNetwork"`
				ServiceAccountName string `json:"serviceAccountName"`
				Tolerations        []map[string]string
				Containers         []struct {
					Image           string
					Command         []string
					Env             []map[string]any
					SecurityContext struct{ Privileged bool } `json:"securityContext"`
				}
			}
		}
	}
}

// manifestDocs parses the manifest's objects of one kind.
func manifestDocs(t *testing.T, m, kind string) []manifestDoc {
	t.Helper()
	var out []manifestDoc
	for _, doc := range strings.Split(m, "\n---\n") {
		var d manifestDoc
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}
