package kindnode

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
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

// kind patches CONTROL_PLANE_ENDPOINT into the first container of the CNI
// DaemonSet only when the manifest carries its marker, and the DaemonSet runs on
// every node (the control plane and the GPU pools are tainted).
func TestCNIManifestIsPatchableAndRunsEverywhere(t *testing.T) {
	m := cniManifest("x/tools:1")
	if !strings.Contains(m, "would you kindly patch this file") {
		t.Fatal("manifest lacks kind's patch marker: CONTROL_PLANE_ENDPOINT would be missing")
	}
	var ds struct {
		Kind string
		Spec struct {
			Template struct {
				Spec struct {
					HostNetwork bool `json:"hostNetwork"`
					Tolerations []map[string]string
					Containers  []struct {
						Image string
						Env   []map[string]any
					}
				}
			}
		}
	}
	for _, doc := range strings.Split(m, "\n---\n") {
		if strings.Contains(doc, "kind: DaemonSet") {
			if err := yaml.Unmarshal([]byte(doc), &ds); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := ds.Spec.Template.Spec
	if ds.Kind != "DaemonSet" || !s.HostNetwork || len(s.Containers) != 1 || s.Containers[0].Image != "x/tools:1" || len(s.Containers[0].Env) == 0 {
		t.Fatalf("DaemonSet not as kind patches it (host network, one container with an env list, the tools image): %+v", ds)
	}
	if len(s.Tolerations) != 1 || s.Tolerations[0]["operator"] != "Exists" {
		t.Errorf("tolerations %v: the DaemonSet must tolerate every taint", s.Tolerations)
	}
}
