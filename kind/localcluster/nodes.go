package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// AddNodes creates a kwok-managed Node for every node of the pools — labels, taint
// and GPU capacity as the pool describes, and a ResourceSlice for the GPUs it
// serves through DRA — and waits until all are Ready.
func (cp *ControlPlane) AddNodes(ctx context.Context, pools []nodepool.Pool) error {
	if err := nodepool.Validate(pools); err != nil {
		return err
	}
	var names []string
	byName := map[string]nodepool.Node{}
	created := map[string]*corev1.Node{}
	for _, p := range pools {
		for _, n := range p.Nodes {
			node, err := KwokNode(p, n)
			if err != nil {
				return err
			}
			got, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				got, err = cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			}
			if err != nil {
				return fmt.Errorf("creating node %s: %w", n.Name, err)
			}
			names = append(names, n.Name)
			byName[n.Name], created[n.Name] = n, got
		}
	}
	if err := cp.publishKwokSlices(ctx, byName, created); err != nil {
		return err
	}
	return cp.WaitForNodesReady(ctx, names)
}

// KwokNode returns the Node object kwok will bring to life for a pool's node.
func KwokNode(p nodepool.Pool, n nodepool.Node) (*corev1.Node, error) {
	capacity := corev1.ResourceList{}
	for name, q := range n.Capacity() {
		qty, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, fmt.Errorf("node %s: resource %s quantity %q: %w", n.Name, name, q, err)
		}
		capacity[corev1.ResourceName(name)] = qty
	}
	var taints []corev1.Taint
	for _, t := range p.Taints() {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	labels := p.Labels(n)
	labels["type"] = "kwok"
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Labels:      labels,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
		},
	}, nil
}
