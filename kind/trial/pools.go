package trial

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/mig"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// SystemPool is the pool of the trial's system node: gpuvc's manager and every
// team's vCluster control plane run there (the webhook pins control planes to it).
const SystemPool = contract.DefaultSystemPool

// Pools returns the trial's node pools, one kind worker per node:
//   - system: system-0, untainted, with 4 A100-80GB (2 whole, 2 in MIG mode with
//     the balanced layout), as the e2e suite's real local node has, so scenarios
//     of teams in the system pool run the same on kind;
//   - a100: a100-0 with 8 A100-80GB, 4 whole and 4 in MIG mode (mixed strategy:
//     nvidia.com/gpu and nvidia.com/mig-<profile> side by side);
//   - h100: h100-0 with 8 H100-80GB, whole.
//
// GPU pools are tainted. Every GPU node of a pool has the same GPUs: the chart
// runs one simulated agent (and device plugin) spec per pool (agent.simulate).
// The kind nodes are named after these nodes.
func Pools() []nodepool.Pool {
	return []nodepool.Pool{
		{Name: SystemPool, Nodes: []nodepool.Node{{Name: "system-0", GPU: a100s(4, 2)}}},
		{Name: "a100", Taint: true, Nodes: []nodepool.Node{{Name: "a100-0", GPU: a100s(8, 4)}}},
		{Name: "h100", Taint: true, Nodes: []nodepool.Node{
			{Name: "h100-0", GPU: &nodepool.GPUs{Product: nodepool.ProductH100_80GB, Count: 8, MemoryMiB: 81920}},
		}},
	}
}

// a100s are count A100-80GB of which migGPUs are in MIG mode, each split by the
// balanced layout (2 × 1g.10gb, 1 × 2g.20gb, 1 × 3g.40gb).
func a100s(count, migGPUs int) *nodepool.GPUs {
	return &nodepool.GPUs{
		Product: nodepool.ProductA100_80GB, Count: count, MemoryMiB: 81920, MIGGPUs: migGPUs,
		MIG: map[string]int{"1g.10gb": 2 * migGPUs, "2g.20gb": migGPUs, "3g.40gb": migGPUs},
	}
}

// checkPools refuses pools the trial cannot build: inconsistent pools, no single
// system node (its address is the one in each team's kubeconfig, see Values), GPU
// nodes of one pool that differ, or GPUs no simulation reproduces.
func checkPools(pools []nodepool.Pool) error {
	if err := nodepool.Validate(pools); err != nil {
		return err
	}
	systemNodes := 0
	for _, p := range pools {
		if p.Name == SystemPool {
			systemNodes += len(p.Nodes)
			if p.Taint {
				return fmt.Errorf("pool %s must be untainted: gpuvc's manager runs there", SystemPool)
			}
		}
		if _, err := poolSpec(p); err != nil {
			return err
		}
	}
	if systemNodes != 1 {
		return fmt.Errorf("the trial needs exactly one node in pool %q (vCluster puts the address of the node its control plane runs on in its certificate, and team kubeconfigs name that node), got %d", SystemPool, systemNodes)
	}
	return nil
}

// SimulateSpecs maps each pool with GPUs to the `gpuvc agent --simulate` spec
// that reproduces its nodes' GPUs (chart value agent.simulate).
func SimulateSpecs(pools []nodepool.Pool) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pools {
		spec, err := poolSpec(p)
		if err != nil {
			return nil, err
		}
		if spec != nil {
			out[p.Name] = specString(*spec)
		}
	}
	return out, nil
}

// poolSpec returns the simulation of a pool's GPU nodes, nil for a CPU pool.
func poolSpec(p nodepool.Pool) (*inventory.Spec, error) {
	var first *nodepool.Node
	for i := range p.Nodes {
		n := &p.Nodes[i]
		switch {
		case first == nil:
			first = n
		case (n.GPU == nil) != (first.GPU == nil) || (n.GPU != nil && !reflect.DeepEqual(*n.GPU, *first.GPU)):
			return nil, fmt.Errorf("pool %s: nodes %s and %s have different GPUs, but the chart simulates one kind of node per pool (agent.simulate): put them in different pools",
				p.Name, first.Name, n.Name)
		}
	}
	if first == nil || first.GPU == nil {
		return nil, nil
	}
	spec, err := simulation(*first.GPU)
	if err != nil {
		return nil, fmt.Errorf("pool %s, node %s: %w", p.Name, first.Name, err)
	}
	return &spec, nil
}

// simulation is the inventory spec of a node's GPUs: whole GPUs first, then the
// GPUs in MIG mode, each with an equal share of the MIG devices. It is checked:
// the device plugin serving it advertises exactly the node's GPU capacity.
func simulation(g nodepool.GPUs) (inventory.Spec, error) {
	spec := inventory.Spec{Product: g.Product, Count: g.Count}
	if g.DRA > 0 {
		return spec, fmt.Errorf("%d GPUs served through DRA: kind workers serve GPUs through the device plugin only (set DRA to 0)", g.DRA)
	}
	if _, err := mig.Lookup(g.Product); err != nil {
		spec.MemoryMiB = int64(g.MemoryMiB) // only products outside the MIG catalog need it
	}
	if n := g.MIGModeGPUs(); n > 0 {
		layout, err := evenLayout(g.MIG, n)
		if err != nil {
			return spec, err
		}
		if g.WholeGPUs() == 0 {
			spec.MIG = []string{layout}
		} else {
			for range g.WholeGPUs() {
				spec.MIG = append(spec.MIG, "all-disabled")
			}
			for range n {
				spec.MIG = append(spec.MIG, layout)
			}
		}
	}
	inv, err := inventory.Simulate(spec)
	if err != nil {
		return spec, fmt.Errorf("simulating %s: %w", specString(spec), err)
	}
	got := map[string]string{}
	for _, r := range deviceplugin.Resources(inv) {
		got[r.Name] = strconv.Itoa(len(r.DeviceIDs))
	}
	want := map[string]string{}
	for k, v := range (nodepool.Node{GPU: &g}).Capacity() {
		if strings.HasPrefix(k, "nvidia.com/") {
			want[k] = v
		}
	}
	if !maps.Equal(got, want) {
		return spec, fmt.Errorf("simulating %s advertises %v, not the node's %v", specString(spec), got, want)
	}
	return spec, nil
}

// evenLayout splits MIG device counts evenly over n GPUs: {1g.10gb: 8, 3g.40gb:
// 4} over 4 GPUs is "2x1g.10gb,3g.40gb" on each.
func evenLayout(devices map[string]int, n int) (string, error) {
	var parts []string
	for _, profile := range slices.Sorted(maps.Keys(devices)) {
		count := devices[profile]
		if count%n != 0 {
			return "", fmt.Errorf("%d %s MIG devices cannot be split evenly over %d GPUs in MIG mode", count, profile, n)
		}
		switch per := count / n; per {
		case 0:
		case 1:
			parts = append(parts, profile)
		default:
			parts = append(parts, fmt.Sprintf("%dx%s", per, profile))
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no MIG devices for the %d GPUs in MIG mode", n)
	}
	return strings.Join(parts, ","), nil
}

// specString writes a spec as `gpuvc agent --simulate` parses it; mig comes last
// because its layouts may contain commas.
func specString(s inventory.Spec) string { return s.Flag() }

// nodeLabels are the labels a worker registers with: the pool's labels for the
// node (without the kubernetes.io/ ones the kubelet owns) and, for GPU nodes,
// exactly the GFD-style labels the simulated agent will publish, so the agent
// finds them already right.
func nodeLabels(p nodepool.Pool, n nodepool.Node) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range p.Labels(n) {
		if !strings.Contains(k, "kubernetes.io/") {
			out[k] = v
		}
	}
	if n.GPU == nil {
		return out, nil
	}
	spec, err := simulation(*n.GPU)
	if err != nil {
		return nil, fmt.Errorf("pool %s, node %s: %w", p.Name, n.Name, err)
	}
	inv, err := inventory.Simulate(spec)
	if err != nil {
		return nil, err
	}
	published, err := inventory.Labels(inv, inventory.StrategyMixed)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, published)
	return out, nil
}
