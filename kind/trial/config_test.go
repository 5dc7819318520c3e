package trial

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/kind/nodepool"
)

func TestClusterConfigMirrorsThePools(t *testing.T) {
	cfg, err := ClusterConfig(nodepool.Default())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(cfg.Nodes); got != 5 {
		t.Fatalf("nodes = %d, want a control plane and 4 workers (system, a100 x2, h100)", got)
	}
	if cfg.Nodes[0].Role != v1alpha4.ControlPlaneRole {
		t.Errorf("first node is %s, want control-plane", cfg.Nodes[0].Role)
	}
	byPool := map[string][]v1alpha4.Node{}
	for _, n := range cfg.Nodes[1:] {
		if n.Role != v1alpha4.WorkerRole {
			t.Errorf("node role %s, want worker", n.Role)
		}
		for k := range n.Labels {
			if strings.Contains(k, "kubernetes.io/") {
				t.Errorf("label %s would be refused: the kubelet owns kubernetes.io/ labels", k)
			}
		}
		byPool[n.Labels[nodepool.PoolLabel]] = append(byPool[n.Labels[nodepool.PoolLabel]], n)
	}
	if diff := cmp.Diff(map[string]int{"system": 1, "a100": 2, "h100": 1}, map[string]int{
		"system": len(byPool["system"]), "a100": len(byPool["a100"]), "h100": len(byPool["h100"]),
	}); diff != "" {
		t.Errorf("workers per pool (-want +got):\n%s", diff)
	}
	if len(byPool["system"][0].KubeadmConfigPatches) != 0 {
		t.Error("the system pool is untainted")
	}
	h100 := byPool["h100"][0]
	if h100.Labels["nvidia.com/gpu.product"] != nodepool.ProductH100_80GB || h100.Labels[nodepool.SimulatedLabel] != "true" {
		t.Errorf("h100 labels = %v", h100.Labels)
	}
	var join struct {
		Kind             string
		NodeRegistration struct {
			Taints []struct{ Key, Value, Effect string }
		} `json:"nodeRegistration"`
	}
	if len(h100.KubeadmConfigPatches) != 1 {
		t.Fatalf("h100 patches = %v", h100.KubeadmConfigPatches)
	}
	if err := yaml.UnmarshalStrict([]byte(h100.KubeadmConfigPatches[0]), &join); err != nil {
		t.Fatal(err)
	}
	if join.Kind != "JoinConfiguration" || len(join.NodeRegistration.Taints) != 1 ||
		join.NodeRegistration.Taints[0] != (struct{ Key, Value, Effect string }{"gpuvc.dev/pool", "h100", "NoSchedule"}) {
		t.Errorf("h100 join patch = %+v", join)
	}

	// The rendered file reads back as kind's own type.
	b, err := YAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back := &v1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(b, back); err != nil {
		t.Fatalf("rendered config is not a kind v1alpha4 Cluster: %v\n%s", err, b)
	}
	if diff := cmp.Diff(cfg, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestClusterConfigRefusesBadPools(t *testing.T) {
	pools := []nodepool.Pool{{Name: "a", Nodes: []nodepool.Node{{Name: "x"}}}, {Name: "b", Nodes: []nodepool.Node{{Name: "x"}}}}
	if _, err := ClusterConfig(pools); err == nil || !strings.Contains(err.Error(), `node "x" appears in pools "a" and "b"`) {
		t.Errorf("got %v", err)
	}
}
