package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/kind/supervise"
)

// poll runs cond until it reports done, failing fast if any component has exited.
func (cp *ControlPlane) poll(ctx context.Context, what string, cond func(ctx context.Context) (bool, error)) error {
	return supervise.Poll(ctx, what, cp.procs, cond)
}

// waitHTTP waits for a component's health endpoint to answer 200.
func (cp *ControlPlane) waitHTTP(ctx context.Context, c Component, url string) error {
	return supervise.WaitHTTP(ctx, string(c), cp.procs, url)
}

func (cp *ControlPlane) waitAPIServer(ctx context.Context) error {
	return cp.poll(ctx, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, err
		}
		return string(body) == "ok", nil
	})
}

// WaitForServiceAccount waits until a ServiceAccount exists. The ServiceAccount
// admission plugin refuses pods until the namespace's `default` ServiceAccount has
// been created by the controller manager.
func (cp *ControlPlane) WaitForServiceAccount(ctx context.Context, namespace, name string) error {
	return cp.poll(ctx, fmt.Sprintf("ServiceAccount %s/%s", namespace, name), func(ctx context.Context) (bool, error) {
		_, err := cp.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// WaitForQuota waits until the controller manager has filled a ResourceQuota's
// status.hard: until then the ResourceQuota admission plugin refuses every pod of
// the namespace.
func (cp *ControlPlane) WaitForQuota(ctx context.Context, namespace, name string) error {
	return cp.poll(ctx, fmt.Sprintf("ResourceQuota %s/%s status", namespace, name), func(ctx context.Context) (bool, error) {
		q, err := cp.Client.CoreV1().ResourceQuotas(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for res, hard := range q.Spec.Hard {
			got, ok := q.Status.Hard[res]
			if !ok || got.Cmp(hard) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// WaitForNodesReady waits until every named node reports Ready.
func (cp *ControlPlane) WaitForNodesReady(ctx context.Context, names []string) error {
	return cp.poll(ctx, fmt.Sprintf("nodes %v Ready", names), func(ctx context.Context) (bool, error) {
		for _, n := range names {
			node, err := cp.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !NodeReady(node) {
				return false, nil
			}
		}
		return true, nil
	})
}

// NodeReady reports whether a Node's Ready condition is true.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
