package accounting

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/mig"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

const (
	resourceGPU = corev1.ResourceName(contract.ResourceGPU)
	// defaultComputeSlices weighs MIG slices on nodes without GPU Feature
	// Discovery's product label (contract.LabelGPUProduct), which names the MIG
	// model (A100/H100/H200).
	defaultComputeSlices = 7
)

// Holds reports whether a pod holds its GPUs: from when it is bound to a node
// (the device plugin allocates at admission; nobody else can have them) until it
// has finished (Succeeded or Failed) or is gone. A deleted pod still holds them
// during its termination grace.
func Holds(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// NodeInfo is what weighing needs of a node: its pool and GPU product labels;
// and the GPU-seconds each team lost there to GPU failures (the node agent's
// annotation gpuvc.dev/gpu-seconds-lost).
type NodeInfo struct {
	Pool, Product string
	Lost          map[string]float64
}

// TeamRates weighs the pods of one team namespace: the GPUs held per pool and
// kind. nodes maps node names to their labels; defaultPool is used for a node
// without a pool label (or unknown).
func TeamRates(pods []corev1.Pod, nodes map[string]NodeInfo, defaultPool string) Rates {
	rates := Rates{}
	pool := func(p *corev1.Pod) string {
		if n, ok := nodes[p.Spec.NodeName]; ok && n.Pool != "" {
			return n.Pool
		}
		return defaultPool
	}
	// Reservations held, and the shares bound to each: the shares are "fraction",
	// the rest of the reservation "reserved".
	reserved := map[string]float64{}
	reservedPool := map[string]string{}
	shared := map[string]float64{}
	for i := range pods {
		p := &pods[i]
		if !Holds(p) {
			continue
		}
		switch {
		case p.Labels[contract.LabelRole] == contract.RoleReservation:
			reserved[p.Name] += float64(podRequest(p, resourceGPU))
			reservedPool[p.Name] = pool(p)
		case p.Annotations[contract.AnnotationShareUnits] != "":
			units, err := strconv.Atoi(p.Annotations[contract.AnnotationShareUnits])
			if err != nil || units <= 0 {
				continue
			}
			share := float64(units) / gpushare.UnitsPerGPU
			rates[Key{pool(p), KindFraction}] += share
			shared[p.Labels[contract.LabelShareGroup]] += share
		default:
			for name, qty := range podRequests(p) {
				if name == resourceGPU {
					rates[Key{pool(p), KindWhole}] += float64(qty)
				} else if w := migWeight(name, nodes[p.Spec.NodeName].Product); w > 0 {
					rates[Key{pool(p), KindMIG}] += float64(qty) * w
				}
			}
		}
	}
	for name, gpus := range reserved {
		if rest := gpus - shared[name]; rest > 1e-9 {
			rates[Key{reservedPool[name], KindReserved}] += rest
		}
	}
	for k, v := range rates {
		if v <= 0 {
			delete(rates, k)
		}
	}
	return rates
}

// migWeight is a MIG resource's compute slices over its GPU model's, 0 for
// anything that is not a MIG resource.
func migWeight(name corev1.ResourceName, product string) float64 {
	if !strings.HasPrefix(string(name), contract.ResourceMIGPrefix) {
		return 0
	}
	profile, err := mig.ParseResourceName(string(name))
	if err != nil {
		return 0
	}
	total := defaultComputeSlices
	if m, err := mig.Lookup(product); err == nil && m.ComputeSlices > 0 {
		total = m.ComputeSlices
	}
	return float64(profile.ComputeSlices) / float64(total)
}

// podRequests is the pod's effective request of each GPU resource: the sum over
// its containers and sidecars, or an init container's when larger (init containers
// run before the others and the device plugin hands the same devices on).
func podRequests(p *corev1.Pod) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for _, c := range p.Spec.Containers {
		addGPU(out, c.Resources.Requests, c.Resources.Limits)
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addGPU(out, c.Resources.Requests, c.Resources.Limits)
		}
	}
	for _, c := range p.Spec.InitContainers {
		init := map[corev1.ResourceName]int64{}
		addGPU(init, c.Resources.Requests, c.Resources.Limits)
		for n, v := range init {
			out[n] = max(out[n], v)
		}
	}
	return out
}

func podRequest(p *corev1.Pod, name corev1.ResourceName) int64 { return podRequests(p)[name] }

// addGPU adds the GPU resources of one container; extended resources are asked
// with limits (the request defaults to the limit).
func addGPU(out map[corev1.ResourceName]int64, requests, limits corev1.ResourceList) {
	seen := map[corev1.ResourceName]bool{}
	for _, list := range []corev1.ResourceList{requests, limits} {
		for n, q := range list {
			if seen[n] || (n != resourceGPU && !strings.HasPrefix(string(n), contract.ResourceMIGPrefix)) {
				continue
			}
			seen[n] = true
			out[n] += q.Value()
		}
	}
}
