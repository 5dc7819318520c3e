package nodepool

// A100 and H100 facts used by the default pools (GFD product names, memory in MiB).
const (
	ProductA100_80GB = "NVIDIA-A100-SXM4-80GB"
	ProductH100_80GB = "NVIDIA-H100-80GB-HBM3"
	memory80GBMiB    = 81920
)

// Default returns the pools the local control plane and the trial start with:
//   - system: one untainted CPU node for control-plane pods (e.g. vCluster's);
//   - a100: two nodes with 8 A100-80GB each, one whole GPUs, one in MIG mixed mode
//     with every GPU in the "all-balanced" layout (2x1g.10gb + 2g.20gb + 3g.40gb);
//   - h100: one node with 8 H100-80GB.
func Default() []Pool {
	return []Pool{
		{Name: "system", Nodes: []Node{cpuNode("system-0")}},
		{Name: "a100", Taint: true, Nodes: []Node{
			gpuNode("a100-0", &GPUs{Product: ProductA100_80GB, Count: 8, MemoryMiB: memory80GBMiB}),
			gpuNode("a100-mig-0", &GPUs{Product: ProductA100_80GB, Count: 8, MemoryMiB: memory80GBMiB,
				MIG: map[string]int{"1g.10gb": 16, "2g.20gb": 8, "3g.40gb": 8}}),
		}},
		{Name: "h100", Taint: true, Nodes: []Node{
			gpuNode("h100-0", &GPUs{Product: ProductH100_80GB, Count: 8, MemoryMiB: memory80GBMiB}),
		}},
	}
}

func cpuNode(name string) Node {
	return Node{Name: name, CPU: "32", Memory: "128Gi", EphemeralStorage: "500Gi", Pods: 110}
}

func gpuNode(name string, g *GPUs) Node {
	return Node{Name: name, CPU: "128", Memory: "1Ti", EphemeralStorage: "2Ti", Pods: 110, GPU: g}
}
