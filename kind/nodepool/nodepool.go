// Package nodepool describes simulated node pools — GPU models, counts, MIG layouts,
// pool labels and taints — once, for every place that fakes GPU nodes: kwok nodes of
// the local control plane and the kind trial's workers.
package nodepool

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// Pool is a set of nodes that share a label and, for GPU pools, a NoSchedule taint
// so only pods that tolerate it (the pool's teams) land there.
type Pool struct {
	Name  string
	Taint bool
	Nodes []Node
}

// Node is one simulated machine.
type Node struct {
	Name   string
	CPU    string // e.g. "64"
	Memory string // e.g. "512Gi"
	// EphemeralStorage is the node's local disk for pods, e.g. "500Gi"; pods that
	// request ephemeral-storage (vCluster's control plane does) need it.
	EphemeralStorage string
	Pods             int
	GPU              *GPUs // nil for a CPU-only node
}

// GPUs describe a node's GPUs the way the device plugin (mixed MIG strategy) and GPU
// Feature Discovery would present them.
type GPUs struct {
	Product   string // GFD product label, e.g. NVIDIA-A100-SXM4-80GB
	Count     int    // physical GPUs on the node
	MemoryMiB int    // memory of one GPU
	// MIG maps a MIG profile (e.g. "1g.10gb") to the number of such devices on the
	// node. When set, the GPUs in MIG mode (MIGGPUs) advertise MIG devices only
	// (mixed strategy).
	MIG map[string]int
	// MIGGPUs is how many of the Count GPUs are in MIG mode when MIG is set; 0
	// means all of them. The others are advertised as whole nvidia.com/gpu, so a
	// node can offer both (mixed strategy).
	MIGGPUs int
	// DRA is how many of the whole GPUs (not in MIG mode) are served through
	// Dynamic Resource Allocation instead: published in the node's
	// ResourceSlice (kind/localcluster, gpu/dra's devices), not in its
	// nvidia.com/gpu capacity.
	DRA int
}

// MIGModeGPUs is the number of GPUs in MIG mode.
func (g GPUs) MIGModeGPUs() int {
	switch {
	case len(g.MIG) == 0:
		return 0
	case g.MIGGPUs == 0:
		return g.Count
	}
	return g.MIGGPUs
}

// WholeGPUs is the number of GPUs advertised as nvidia.com/gpu.
func (g GPUs) WholeGPUs() int { return g.Count - g.MIGModeGPUs() - g.DRA }

// Labels returns the node's labels: pool, GFD-style GPU facts and OS/arch.
func (p Pool) Labels(n Node) map[string]string {
	l := map[string]string{
		contract.LabelPool:       p.Name,
		"kubernetes.io/hostname": n.Name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
	}
	if n.GPU == nil {
		return l
	}
	g := n.GPU
	l[contract.LabelSimulated] = "true"
	l[contract.LabelGPUPresent] = "true"
	l[contract.LabelGPUProduct] = g.Product
	l[contract.LabelGPUCount] = strconv.Itoa(g.Count)
	l[contract.LabelGPUMemory] = strconv.Itoa(g.MemoryMiB)
	if len(g.MIG) == 0 {
		return l
	}
	l[contract.LabelMIGCapable] = "true"
	l[contract.LabelMIGStrategy] = "mixed"
	for profile, count := range g.MIG {
		l[contract.ResourceMIGPrefix+profile+".count"] = strconv.Itoa(count)
	}
	return l
}

// Taints returns the pool's taint as key, value and effect, or nothing.
func (p Pool) Taints() []Taint {
	if !p.Taint {
		return nil
	}
	return []Taint{{Key: contract.LabelPool, Value: p.Name, Effect: "NoSchedule"}}
}

// Taint is a node taint without Kubernetes types.
type Taint struct{ Key, Value, Effect string }

// Capacity returns the node's resource capacity (quantities as strings).
func (n Node) Capacity() map[string]string {
	c := map[string]string{"cpu": n.CPU, "memory": n.Memory, "pods": strconv.Itoa(n.Pods)}
	if n.EphemeralStorage != "" {
		c["ephemeral-storage"] = n.EphemeralStorage
	}
	if n.GPU == nil {
		return c
	}
	if whole := n.GPU.WholeGPUs(); whole > 0 {
		c[contract.ResourceGPU] = strconv.Itoa(whole)
	}
	for profile, count := range n.GPU.MIG {
		c[MIGResource(profile)] = strconv.Itoa(count)
	}
	return c
}

// MIGResource is the device-plugin resource name of a MIG profile in mixed strategy:
// "1g.10gb" → "nvidia.com/mig-1g.10gb", "1g.10gb+me" → "nvidia.com/mig-1g.10gb.me".
func MIGResource(profile string) string {
	return mig.ResourceName(profile)
}

// Validate reports the first inconsistency in a set of pools, naming it.
func Validate(pools []Pool) error {
	seen := map[string]string{}
	for _, p := range pools {
		if p.Name == "" {
			return fmt.Errorf("node pool with nodes %v has no name", nodeNames(p))
		}
		for _, n := range p.Nodes {
			if other, ok := seen[n.Name]; ok {
				return fmt.Errorf("node %q appears in pools %q and %q: node names must be unique", n.Name, other, p.Name)
			}
			seen[n.Name] = p.Name
			if n.GPU == nil {
				continue
			}
			if n.GPU.Count <= 0 {
				return fmt.Errorf("node %q in pool %q: GPU count %d must be positive", n.Name, p.Name, n.GPU.Count)
			}
			if m := n.GPU.MIGGPUs; m < 0 || m > n.GPU.Count || (m > 0 && len(n.GPU.MIG) == 0) {
				return fmt.Errorf("node %q in pool %q: %d GPUs in MIG mode: want 0 (all, when MIG is set) to %d, and MIG devices for them", n.Name, p.Name, m, n.GPU.Count)
			}
			if d, whole := n.GPU.DRA, n.GPU.Count-n.GPU.MIGModeGPUs(); d < 0 || d > whole {
				return fmt.Errorf("node %q in pool %q: %d GPUs served through DRA: want 0 to %d, the GPUs not in MIG mode", n.Name, p.Name, d, whole)
			}
		}
	}
	return nil
}

func nodeNames(p Pool) []string {
	var names []string
	for _, n := range p.Nodes {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return names
}
