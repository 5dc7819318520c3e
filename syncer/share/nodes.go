package share

import (
	"context"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// nodeMeta is a node's labels; nodes are read metadata-only from the cache.
func nodeMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Node"))
	m.APIVersion, m.Kind = "v1", "Node"
	return m
}

func nodeMetaList() *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.APIVersion, l.Kind = "v1", "NodeList"
	return l
}

func gpuMemory(labels map[string]string) int64 {
	m, err := strconv.ParseInt(labels[contract.LabelGPUMemory], 10, 64)
	if err != nil || m <= 0 {
		return 0
	}
	return m
}

// node is what the controller reads of a node: its labels and annotations.
type node struct {
	labels, annotations map[string]string
}

// runsNoContainers reports a node where no kubelet runs containers (a kwok
// node): no `gpuvc reserve` will report a GPU there, so the controller records
// a simulated UUID itself. Simulated GPUs alone (gpuvc.dev/simulated=true) do
// not qualify: a real kubelet with gpuvc's simulated device plugin assigns a
// device, and the reservation pod reports it.
func (n node) runsNoContainers() bool {
	_, kwok := n.annotations[contract.AnnotationKwokNode]
	return kwok
}

// unhealthyGPUs are the UUIDs the node's agent lists as failed.
func (n node) unhealthyGPUs() []string {
	v := n.annotations[contract.AnnotationUnhealthyGPUs]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// RunsNoContainers is runsNoContainers for a node's metadata, for tests of
// other packages that create nodes (kind trial workers, the real node).
func RunsNoContainers(labels, annotations map[string]string) bool {
	return node{labels: labels, annotations: annotations}.runsNoContainers()
}

// nodes reads the metadata of the named nodes; missing nodes are left out.
func (c *Controller) nodes(ctx context.Context, names []string) (map[string]node, error) {
	out := map[string]node{}
	for _, n := range names {
		if _, done := out[n]; done {
			continue
		}
		m := nodeMeta()
		if err := c.opts.Client.Get(ctx, client.ObjectKey{Name: n}, m); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return nil, err
		}
		out[n] = node{labels: m.Labels, annotations: m.Annotations}
	}
	return out, nil
}

// poolMemory is the smallest GPU memory among the pool's nodes (0 if none says):
// shares placed on a reservation before it is bound are sized for it, so they
// are never too small for the GPU the scheduler picks.
func (c *Controller) poolMemory(ctx context.Context, pool string) (int64, error) {
	l := nodeMetaList()
	if err := c.opts.Client.List(ctx, l, client.MatchingLabels{contract.LabelPool: pool}); err != nil {
		return 0, err
	}
	var min int64
	for _, n := range l.Items {
		if m := gpuMemory(n.Labels); m > 0 && (min == 0 || m < min) {
			min = m
		}
	}
	return min, nil
}
