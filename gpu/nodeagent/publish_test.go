package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nvmltest"
	"github.com/gpuvc/gpuvc/syncer/share"
)

func simulate(t *testing.T, spec string) inventory.Inventory {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Simulate(s)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestBuild(t *testing.T) {
	whole := simulate(t, "product=NVIDIA-A100-SXM4-80GB,count=8")
	migInv := simulate(t, "product=NVIDIA-A100-SXM4-80GB,count=2,mig=all-balanced")
	tests := map[string]struct {
		inv      inventory.Inventory
		strategy inventory.Strategy
		gfd      bool
		want     map[string]string
	}{
		"whole GPUs, mixed": {whole, inventory.StrategyMixed, false, map[string]string{
			"gpuvc.dev/simulated":     "true",
			"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-80GB",
			"nvidia.com/gpu.count":    "8",
			"nvidia.com/gpu.memory":   "81920",
			"nvidia.com/mig.capable":  "true",
			"nvidia.com/mig.strategy": "mixed",
		}},
		"whole GPUs, none": {whole, inventory.StrategyNone, false, map[string]string{
			"gpuvc.dev/simulated":    "true",
			"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
			"nvidia.com/gpu.count":   "8",
			"nvidia.com/gpu.memory":  "81920",
			"nvidia.com/mig.capable": "true",
		}},
		"MIG all-balanced, mixed": {migInv, inventory.StrategyMixed, false, map[string]string{
			"gpuvc.dev/simulated":              "true",
			"nvidia.com/gpu.product":           "NVIDIA-A100-SXM4-80GB",
			"nvidia.com/gpu.count":             "2",
			"nvidia.com/gpu.memory":            "81920",
			"nvidia.com/mig.capable":           "true",
			"nvidia.com/mig.strategy":          "mixed",
			"nvidia.com/mig-1g.10gb.count":     "4",
			"nvidia.com/mig-1g.10gb.memory":    "9728",
			"nvidia.com/mig-1g.10gb.slices.gi": "1",
			"nvidia.com/mig-1g.10gb.slices.ci": "1",
			"nvidia.com/mig-2g.20gb.count":     "2",
			"nvidia.com/mig-2g.20gb.memory":    "19968",
			"nvidia.com/mig-2g.20gb.slices.gi": "2",
			"nvidia.com/mig-2g.20gb.slices.ci": "2",
			"nvidia.com/mig-3g.40gb.count":     "2",
			"nvidia.com/mig-3g.40gb.memory":    "40192",
			"nvidia.com/mig-3g.40gb.slices.gi": "3",
			"nvidia.com/mig-3g.40gb.slices.ci": "3",
		}},
		"GFD present: no nvidia.com labels": {whole, inventory.StrategyMixed, true, map[string]string{
			"gpuvc.dev/simulated": "true",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pub, err := Build(tc.inv, tc.strategy, tc.gfd)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, pub.Labels); diff != "" {
				t.Errorf("labels -want +got:\n%s", diff)
			}
			// The agent runs beside a kubelet: its publication must not make
			// the share controller take the node for a kwok node and invent
			// reservation UUIDs (gpuvc reserve reports the assigned device).
			if share.RunsNoContainers(pub.Labels, pub.Annotations) {
				t.Errorf("publication %v %v would make the share controller invent UUIDs", pub.Labels, pub.Annotations)
			}
			var back inventory.Inventory
			if err := json.Unmarshal([]byte(pub.Annotations[contract.AnnotationGPUInventory]), &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.inv, back); diff != "" {
				t.Errorf("annotation does not round-trip, -want +got:\n%s", diff)
			}
		})
	}
}

// A node mixing products gets its annotation but no GFD labels, and says why.
func TestBuildMixedProducts(t *testing.T) {
	inv := inventory.Inventory{GPUs: []inventory.GPU{
		{Index: 0, UUID: "GPU-a", Product: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920},
		{Index: 1, UUID: "GPU-b", Product: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559},
	}}
	pub, err := Build(inv, inventory.StrategyMixed, false)
	if err == nil || !strings.Contains(err.Error(), "GPU labels not published") || !strings.Contains(err.Error(), "mixes GPU products") {
		t.Fatalf("error = %v, want labels refused for mixed products", err)
	}
	if pub.Annotations[contract.AnnotationGPUInventory] == "" {
		t.Error("the annotation must still be published")
	}
	if len(pub.Labels) != 0 {
		t.Errorf("labels = %v, want none", pub.Labels)
	}
}

func TestDetectGFD(t *testing.T) {
	tests := map[string]struct {
		labels, annotations map[string]string
		want                bool
	}{
		"nothing":               {nil, nil, false},
		"GFD-style labels only": {map[string]string{"nvidia.com/gpu.product": "X", "nvidia.com/gpu.count": "8"}, nil, false},
		"timestamp":             {map[string]string{contract.LabelGFDTimestamp: "1700000000"}, nil, true},
		"NFD lists nvidia.com":  {nil, map[string]string{NFDFeatureLabelsAnnotation: "cpu-cpuid.AVX,nvidia.com/gpu.product,nvidia.com/gpu.count"}, true},
		"NFD without nvidia":    {nil, map[string]string{NFDFeatureLabelsAnnotation: "cpu-cpuid.AVX,kernel-version.major"}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations}}
			got, why := DetectGFD(node)
			if got != tc.want {
				t.Errorf("DetectGFD = %v (%s), want %v", got, why, tc.want)
			}
			if got && why == "" {
				t.Error("no evidence given")
			}
		})
	}
	if _, err := ParseGFDMode("sometimes"); err == nil || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Errorf("ParseGFDMode error = %v, want it to name the value", err)
	}
}

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// NVML (mock) → inventory → Node annotation and labels, through the agent.
func TestAgentOnceNVML(t *testing.T) {
	client := fake.NewClientset(node("gpu-0", map[string]string{"kubernetes.io/hostname": "gpu-0"}))
	agent := Agent{Source: inventory.NVML{Lib: nvmltest.A100s(t, 2)}, Publisher: Publisher{Client: client, NodeName: "gpu-0"}}
	res, err := agent.Once(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.GPUs != 2 || res.GFD {
		t.Errorf("result = %+v", res)
	}
	got, err := client.CoreV1().Nodes().Get(context.Background(), "gpu-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"kubernetes.io/hostname":  "gpu-0",
		"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-80GB",
		"nvidia.com/gpu.count":    "2",
		"nvidia.com/gpu.memory":   "81920",
		"nvidia.com/mig.capable":  "true",
		"nvidia.com/mig.strategy": "mixed",
		// GFD's version labels, from what the mock's NVML reports.
		"nvidia.com/cuda.driver.major": "580", "nvidia.com/cuda.driver.minor": "65", "nvidia.com/cuda.driver.rev": "06",
		"nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0", "nvidia.com/gpu.family": "ampere",
	}
	if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
		t.Errorf("labels -want +got:\n%s", diff)
	}
	var inv inventory.Inventory
	if err := json.Unmarshal([]byte(got.Annotations[contract.AnnotationGPUInventory]), &inv); err != nil {
		t.Fatal(err)
	}
	wantInv := inventory.Inventory{DriverVersion: nvmltest.DriverVersion, GPUs: []inventory.GPU{
		{Index: 0, UUID: nvmltest.UUID(0), Product: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, ComputeCapability: "8.0", MIG: inventory.MIG{Capable: true}},
		{Index: 1, UUID: nvmltest.UUID(1), Product: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, ComputeCapability: "8.0", MIG: inventory.MIG{Capable: true}},
	}}
	if diff := cmp.Diff(wantInv, inv); diff != "" {
		t.Errorf("annotation -want +got:\n%s", diff)
	}
}

func TestAgentOnceErrors(t *testing.T) {
	tests := map[string]struct {
		source   inventory.Source
		nodes    []*corev1.Node
		want     string
		noDriver bool
	}{
		"no driver": {
			source: inventory.NVML{Lib: nvmltest.NoDriver()},
			want:   `reading the GPUs of node "gpu-0": NVIDIA driver not found`, noDriver: true,
		},
		"init fails otherwise": {
			source: inventory.NVML{Lib: nvmltest.InitFails(nvml.ERROR_NO_PERMISSION)},
			want:   "NVML init: ",
		},
		"node missing": {
			source: inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 1},
			nodes:  []*corev1.Node{node("other", nil)},
			want:   `node "gpu-0" not found`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, n := range tc.nodes {
				_, _ = client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
			}
			agent := Agent{Source: tc.source, Publisher: Publisher{Client: client, NodeName: "gpu-0"}}
			_, err := agent.Once(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if errors.Is(err, inventory.ErrNoDriver) != tc.noDriver {
				t.Errorf("errors.Is(err, ErrNoDriver) = %v, want %v", !tc.noDriver, tc.noDriver)
			}
		})
	}
}

// sourceFunc adapts a function to inventory.Source.
type sourceFunc func() (inventory.Inventory, error)

func (f sourceFunc) Inventory() (inventory.Inventory, error) { return f() }

// Run retries ordinary failures at every tick and returns nil when its
// context ends; a missing driver ends it at once.
func TestAgentRun(t *testing.T) {
	client := fake.NewClientset(node("gpu-0", nil))
	inv := simulate(t, "product=NVIDIA-A100-SXM4-80GB,count=1")
	calls := make(chan int, 10)
	n := 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := sourceFunc(func() (inventory.Inventory, error) {
		n++
		calls <- n
		if n == 1 {
			return inventory.Inventory{}, errors.New("transient")
		}
		if n == 3 {
			cancel()
		}
		return inv, nil
	})
	done := make(chan error, 1)
	go func() {
		done <- Agent{Source: src, Publisher: Publisher{Client: client, NodeName: "gpu-0"}, Interval: time.Millisecond}.Run(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if len(calls) != 3 {
		t.Errorf("inventory read %d times, want 3 (fail, publish, publish+cancel)", len(calls))
	}
	got, _ := client.CoreV1().Nodes().Get(context.Background(), "gpu-0", metav1.GetOptions{})
	if got.Annotations[contract.AnnotationGPUInventory] == "" {
		t.Error("the run after the transient failure did not publish")
	}

	noDriver := sourceFunc(func() (inventory.Inventory, error) { return inventory.Inventory{}, inventory.ErrNoDriver })
	err := Agent{Source: noDriver, Publisher: Publisher{Client: client, NodeName: "gpu-0"}, Interval: time.Hour}.Run(context.Background())
	if !errors.Is(err, inventory.ErrNoDriver) {
		t.Errorf("Run = %v, want ErrNoDriver", err)
	}
	if err := (Agent{Source: noDriver}).Run(context.Background()); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("Run with no interval = %v, want an interval error", err)
	}
}

// A node already carrying the publication is not written again; a label
// another writer changed is restored by the next run.
func TestPublishWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(node("gpu-0", nil))
	inv := simulate(t, "product=NVIDIA-A100-SXM4-80GB,count=2")
	p := Publisher{Client: client, NodeName: "gpu-0"}
	applies := 0
	client.PrependReactor("patch", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.(k8stesting.PatchAction).GetPatchType() == types.ApplyPatchType {
			applies++
		}
		return false, nil, nil
	})
	for i, want := range []bool{true, false, false} {
		res, err := p.Publish(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		if res.Changed != want {
			t.Errorf("run %d: Changed = %v, want %v", i, res.Changed, want)
		}
	}
	if applies != 1 {
		t.Errorf("%d applies for three runs over the same GPUs, want 1", applies)
	}

	// Someone relabels the node: the agent takes its label back.
	n, _ := client.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
	n.Labels["nvidia.com/gpu.count"] = "1"
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatal(err)
	}
	res, err := p.Publish(ctx, inv)
	if err != nil || !res.Changed {
		t.Fatalf("Publish after a foreign change = %+v, %v; want a write", res, err)
	}
	n, _ = client.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
	if n.Labels["nvidia.com/gpu.count"] != "2" {
		t.Errorf("gpu.count = %q, want the agent's 2", n.Labels["nvidia.com/gpu.count"])
	}
}
