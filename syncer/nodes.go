package syncer

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// NodePools tells which pool a node belongs to, so a pod naming a node
// (spec.nodeName, node affinity on metadata.name) can be checked against its pool.
type NodePools interface {
	// PoolOf returns the node's gpuvc.dev/pool label, or "" for a node without
	// one or that does not exist.
	PoolOf(ctx context.Context, node string) (string, error)
}

// ClientNodePools reads nodes through a client (a cache in the manager).
type ClientNodePools struct{ Reader client.Reader }

// PoolOf implements NodePools.
func (n ClientNodePools) PoolOf(ctx context.Context, node string) (string, error) {
	var obj corev1.Node
	if err := n.Reader.Get(ctx, client.ObjectKey{Name: node}, &obj); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", err
	}
	return obj.Labels[contract.LabelPool], nil
}
