package trial

import (
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// joinConfig is the part of kubeadm's JoinConfiguration the trial's patches touch.
type joinConfig struct {
	Kind             string `json:"kind"`
	APIVersion       string `json:"apiVersion,omitempty"`
	NodeRegistration struct {
		Name             string `json:"name"`
		CRISocket        string `json:"criSocket,omitempty"`
		KubeletExtraArgs any    `json:"kubeletExtraArgs,omitempty"`
		Taints           []struct {
			Key, Value, Effect string
		} `json:"taints"`
	} `json:"nodeRegistration"`
}

func TestClusterConfigMirrorsThePools(t *testing.T) {
	cfg, err := ClusterConfig(Pools())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Nodes[0].Role != v1alpha4.ControlPlaneRole {
		t.Errorf("first node is %s, want the control plane", cfg.Nodes[0].Role)
	}
	type worker struct {
		Pool, Product, Simulated string
		Taints                   []string
	}
	got := map[string]worker{}
	for _, n := range cfg.Nodes[1:] {
		if n.Role != v1alpha4.WorkerRole {
			t.Errorf("node role %s, want worker", n.Role)
		}
		for k := range n.Labels {
			if strings.Contains(k, "kubernetes.io/") {
				t.Errorf("label %s would be refused: the kubelet owns kubernetes.io/ labels", k)
			}
		}
		if len(n.KubeadmConfigPatches) != 1 {
			t.Fatalf("patches = %v, want one JoinConfiguration patch", n.KubeadmConfigPatches)
		}
		var join joinConfig
		if err := yaml.UnmarshalStrict([]byte(n.KubeadmConfigPatches[0]), &join); err != nil {
			t.Fatal(err)
		}
		if join.Kind != "JoinConfiguration" || join.APIVersion != "" {
			t.Errorf("patch kind %q apiVersion %q: want JoinConfiguration of any version", join.Kind, join.APIVersion)
		}
		w := worker{Pool: n.Labels[contract.LabelPool], Product: n.Labels["nvidia.com/gpu.product"], Simulated: n.Labels[contract.LabelSimulated]}
		// Kind workers run a kubelet: simulated GPUs, but the reservation pod's
		// gpuvc reserve reports the device, not the share controller.
		if share.RunsNoContainers(n.Labels, nil) {
			t.Errorf("worker labels %v would make the share controller invent reservation UUIDs on a real kubelet", n.Labels)
		}
		for _, tt := range join.NodeRegistration.Taints {
			w.Taints = append(w.Taints, tt.Key+"="+tt.Value+":"+tt.Effect)
		}
		got[join.NodeRegistration.Name] = w
	}
	want := map[string]worker{
		"system-0": {Pool: "system", Product: nodepool.ProductA100_80GB, Simulated: "true"},
		"a100-0":   {Pool: "a100", Product: nodepool.ProductA100_80GB, Simulated: "true", Taints: []string{"gpuvc.dev/pool=a100:NoSchedule"}},
		"h100-0":   {Pool: "h100", Product: nodepool.ProductH100_80GB, Simulated: "true", Taints: []string{"gpuvc.dev/pool=h100:NoSchedule"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workers by registered name (-want +got):\n%s", diff)
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

// kind merges a node's patches into the JoinConfiguration it generates with a JSON
// merge patch (RFC 7386), for the kubeadm API version of the node image: the
// patch must add the name and taints and keep what kind set.
func TestJoinPatchMergesIntoKindsJoinConfiguration(t *testing.T) {
	generated := map[string]string{
		"v1beta3": `apiVersion: kubeadm.k8s.io/v1beta3
kind: JoinConfiguration
metadata: {name: config}
nodeRegistration:
  criSocket: unix:///run/containerd/containerd.sock
  kubeletExtraArgs: {node-ip: 172.18.0.3, provider-id: "kind://docker/gpuvc-trial/gpuvc-trial-worker2", node-labels: ""}
discovery: {bootstrapToken: {apiServerEndpoint: "gpuvc-trial-control-plane:6443", token: abcdef.0123456789abcdef, unsafeSkipCAVerification: true}}
`,
		"v1beta4": `apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
metadata: {name: config}
nodeRegistration:
  criSocket: unix:///run/containerd/containerd.sock
  kubeletExtraArgs: [{name: node-ip, value: 172.18.0.3}, {name: provider-id, value: "kind://docker/gpuvc-trial/gpuvc-trial-worker2"}]
discovery: {bootstrapToken: {apiServerEndpoint: "gpuvc-trial-control-plane:6443", token: abcdef.0123456789abcdef, unsafeSkipCAVerification: true}}
`,
	}
	patch, err := joinPatch("a100-0", []nodepool.Taint{{Key: "gpuvc.dev/pool", Value: "a100", Effect: "NoSchedule"}})
	if err != nil {
		t.Fatal(err)
	}
	patchJSON, err := yaml.YAMLToJSON([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	for version, doc := range generated {
		t.Run(version, func(t *testing.T) {
			docJSON, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			merged, err := jsonpatch.MergePatch(docJSON, patchJSON)
			if err != nil {
				t.Fatal(err)
			}
			var before, after joinConfig
			if err := yaml.Unmarshal(docJSON, &before); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(merged, &after); err != nil {
				t.Fatal(err)
			}
			if after.APIVersion != "kubeadm.k8s.io/"+version || after.NodeRegistration.Name != "a100-0" ||
				after.NodeRegistration.CRISocket == "" || len(after.NodeRegistration.Taints) != 1 {
				t.Errorf("merged = %s", merged)
			}
			if diff := cmp.Diff(before.NodeRegistration.KubeletExtraArgs, after.NodeRegistration.KubeletExtraArgs); diff != "" {
				t.Errorf("kind's kubelet arguments changed (-want +got):\n%s", diff)
			}
		})
	}

	// An untainted pool's node gets its name and no taints key (kubeadm registers
	// workers untainted).
	plain, err := joinPatch("system-0", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "taints") || !strings.Contains(plain, "name: system-0") {
		t.Errorf("patch = %s", plain)
	}
}

func TestClusterConfigRefusesPoolsTheTrialCannotBuild(t *testing.T) {
	gpu := func(n int) *nodepool.GPUs { return &nodepool.GPUs{Product: nodepool.ProductH100_80GB, Count: n} }
	system := nodepool.Pool{Name: SystemPool, Nodes: []nodepool.Node{{Name: "system-0"}}}
	for name, tc := range map[string]struct {
		pools []nodepool.Pool
		want  string
	}{
		"duplicate node": {
			pools: []nodepool.Pool{system, {Name: "b", Nodes: []nodepool.Node{{Name: "system-0"}}}},
			want:  `node "system-0" appears in pools "system" and "b"`,
		},
		"no system node": {
			pools: []nodepool.Pool{{Name: "h100", Taint: true, Nodes: []nodepool.Node{{Name: "h100-0", GPU: gpu(8)}}}},
			want:  `exactly one node in pool "system"`,
		},
		"two system nodes": {
			pools: []nodepool.Pool{{Name: SystemPool, Nodes: []nodepool.Node{{Name: "s0"}, {Name: "s1"}}}},
			want:  `exactly one node in pool "system"`,
		},
		"tainted system pool": {
			pools: []nodepool.Pool{{Name: SystemPool, Taint: true, Nodes: []nodepool.Node{{Name: "s0"}}}},
			want:  "must be untainted",
		},
		"nodes of a pool differ": {
			pools: []nodepool.Pool{system, {Name: "h100", Taint: true, Nodes: []nodepool.Node{
				{Name: "h100-0", GPU: gpu(8)}, {Name: "h100-1", GPU: gpu(4)},
			}}},
			want: "nodes h100-0 and h100-1 have different GPUs",
		},
		"MIG devices that do not split over the GPUs": {
			pools: []nodepool.Pool{system, {Name: "a100", Nodes: []nodepool.Node{{Name: "a100-0", GPU: &nodepool.GPUs{
				Product: nodepool.ProductA100_80GB, Count: 2, MIG: map[string]int{"3g.40gb": 3},
			}}}}},
			want: "3 3g.40gb MIG devices cannot be split evenly over 2 GPUs",
		},
		"MIG devices that do not fit a GPU": {
			pools: []nodepool.Pool{system, {Name: "a100", Nodes: []nodepool.Node{{Name: "a100-0", GPU: &nodepool.GPUs{
				Product: nodepool.ProductA100_80GB, Count: 1, MIG: map[string]int{"3g.40gb": 3},
			}}}}},
			want: "simulating product=NVIDIA-A100-SXM4-80GB,count=1,mig=3x3g.40gb",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ClusterConfig(tc.pools); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
