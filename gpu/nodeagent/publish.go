package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
)

const (
	// FieldManager is the agent's server-side-apply field manager: it owns the
	// annotation and exactly the labels of its last apply.
	FieldManager = "gpuvc-agent"
)

// Publication is what the agent owns on its Node.
type Publication struct {
	Labels      map[string]string
	Annotations map[string]string
}

// Build derives the publication for an inventory: the inventory annotation;
// unless GFD labels the node, the labels GFD would set for strategy s; and
// gpuvc.dev/simulated=true for simulated inventories. When the GFD labels
// cannot be derived (a node mixing GPU products, a single strategy the MIG
// layout does not satisfy) Build still returns the annotation, leaves the
// nvidia.com/ labels out and returns the reason as its error.
func Build(inv inventory.Inventory, s inventory.Strategy, gfd bool) (Publication, error) {
	raw, err := json.Marshal(inv)
	if err != nil {
		return Publication{}, fmt.Errorf("encoding the inventory: %w", err)
	}
	pub := Publication{
		Labels:      map[string]string{},
		Annotations: map[string]string{contract.AnnotationGPUInventory: string(raw)},
	}
	if inv.Simulated {
		pub.Labels[contract.LabelSimulated] = "true"
	}
	if gfd {
		return pub, nil
	}
	labels, err := inventory.Labels(inv, s)
	if err != nil {
		return pub, fmt.Errorf("GPU labels not published: %w", err)
	}
	maps.Copy(pub.Labels, labels)
	return pub, nil
}

// Publisher applies an inventory to one Node with server-side apply.
type Publisher struct {
	Client   kubernetes.Interface
	NodeName string
	// Strategy is the MIG strategy of the labels; empty means mixed.
	Strategy inventory.Strategy
	// GFD says how to decide whether GFD owns the nvidia.com/ labels; empty
	// means auto.
	GFD GFDMode
}

// Result describes one publication.
type Result struct {
	Node string
	GPUs int
	// GFD reports that GFD labels the node (so the agent wrote no nvidia.com/
	// labels) and GFDEvidence why the agent thinks so.
	GFD         bool
	GFDEvidence string
	// Labels are the labels the agent owns after this run.
	Labels map[string]string
	// Changed is false when the Node already carried the publication, owned
	// by the agent, so nothing was written.
	Changed bool
}

// Publish reads the Node (it must exist: the agent never creates one), decides
// whether GFD labels it and, unless the node already carries the publication
// under the agent's ownership, applies it with field manager FieldManager,
// forcing ownership of its keys: the agent is the authority for GPU labels on
// nodes without GFD, and labels GFD owns are never among them. Labels the
// agent applied before and no longer wants (e.g. once GFD appears) are removed
// by the apply unless another manager also set them. Needs get and patch on
// nodes.
func (p Publisher) Publish(ctx context.Context, inv inventory.Inventory) (Result, error) {
	res := Result{Node: p.NodeName, GPUs: len(inv.GPUs)}
	nodes := p.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, p.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res, fmt.Errorf("node %q not found: the node name must be the node the agent runs on (NODE_NAME from the downward API's spec.nodeName)", p.NodeName)
	}
	if err != nil {
		return res, fmt.Errorf("reading node %q: %w", p.NodeName, err)
	}
	mode := p.GFD
	if mode == "" {
		mode = GFDAuto
	}
	strategy := p.Strategy
	if strategy == "" {
		strategy = inventory.StrategyMixed
	}
	res.GFD, res.GFDEvidence = gfdPresent(mode, node)
	pub, buildErr := Build(inv, strategy, res.GFD)
	if pub.Annotations == nil {
		return res, buildErr
	}
	if buildErr != nil {
		buildErr = fmt.Errorf("node %q: %w", p.NodeName, buildErr)
	}
	res.Labels = pub.Labels
	if owned(node, pub) {
		// The node already carries exactly this publication, owned by the
		// agent: no write (every node, every interval).
		return res, buildErr
	}
	ac := corev1ac.Node(p.NodeName).WithLabels(pub.Labels).WithAnnotations(pub.Annotations)
	if _, err := nodes.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return res, fmt.Errorf("applying the GPU inventory to node %q: %w", p.NodeName, err)
	}
	res.Changed = true
	return res, buildErr
}

// owned reports whether exactly pub's labels and annotations are on the node
// with these values and owned by the agent's last apply (read from the node's
// managed fields). A key another writer changed is no longer the agent's, so
// it is applied again.
func owned(node *corev1.Node, pub Publication) bool {
	mine, err := corev1ac.ExtractNode(node, FieldManager)
	if err != nil {
		return false
	}
	return maps.Equal(mine.Labels, pub.Labels) && maps.Equal(mine.Annotations, pub.Annotations)
}

// String summarises a result for logs.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s: %d GPUs, %d labels", r.Node, r.GPUs, len(r.Labels))
	if r.GFD {
		fmt.Fprintf(&b, " (GFD present: %s)", r.GFDEvidence)
	}
	if !r.Changed {
		b.WriteString(", unchanged")
	}
	return b.String()
}
