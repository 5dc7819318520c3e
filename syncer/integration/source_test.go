package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// podSource turns what a tenant writes in its virtual cluster into requests on
// the host API server. Today that is directSource, which writes the host pod the
// way vCluster v0.36 does (name translation, labels and annotations copied, spec
// passed through) with the vCluster syncer's host identity; later a source backed
// by vCluster's own translation code replaces it without changing the tests.
type podSource interface {
	// Create creates the host pod for a virtual pod; the error is the host API
	// server's answer (including webhook refusals).
	Create(ctx context.Context, virtual *corev1.Pod) (*corev1.Pod, error)
	// Update writes a changed host pod, as vCluster does when the virtual pod
	// changes.
	Update(ctx context.Context, host *corev1.Pod) (*corev1.Pod, error)
	// UpdateEphemeralContainers adds debug containers (kubectl debug).
	UpdateEphemeralContainers(ctx context.Context, host *corev1.Pod) (*corev1.Pod, error)
	// Client reads host objects of the team.
	Client() kubernetes.Interface
	// HostNamespace is the team's host namespace.
	HostNamespace() string
}

// directSource writes host pods as a vCluster syncer would.
type directSource struct {
	client        kubernetes.Interface
	hostNamespace string
	vcluster      string
}

// hostName is vCluster's host pod name: <name>-x-<namespace>-x-<vcluster>,
// shortened with a hash beyond 63 characters.
func (s *directSource) hostName(name, namespace string) string {
	n := name + "-x-" + namespace + "-x-" + s.vcluster
	if len(n) <= 63 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:52] + "-" + hex.EncodeToString(sum[:])[:10]
}

func (s *directSource) Create(ctx context.Context, virtual *corev1.Pod) (*corev1.Pod, error) {
	host := virtual.DeepCopy()
	vns := virtual.Namespace
	if vns == "" {
		vns = "default"
	}
	host.ObjectMeta = metav1.ObjectMeta{
		Name:            s.hostName(virtual.Name, vns),
		Namespace:       s.hostNamespace,
		Labels:          map[string]string{},
		Annotations:     map[string]string{},
		OwnerReferences: virtual.OwnerReferences,
	}
	for k, v := range virtual.Labels {
		host.Labels[k] = v
	}
	host.Labels["vcluster.loft.sh/managed-by"] = s.vcluster
	host.Labels["vcluster.loft.sh/namespace"] = vns
	for k, v := range virtual.Annotations {
		host.Annotations[k] = v
	}
	host.Annotations["vcluster.loft.sh/object-name"] = virtual.Name
	host.Annotations["vcluster.loft.sh/object-namespace"] = vns
	return s.client.CoreV1().Pods(s.hostNamespace).Create(ctx, host, metav1.CreateOptions{})
}

func (s *directSource) Update(ctx context.Context, host *corev1.Pod) (*corev1.Pod, error) {
	return s.client.CoreV1().Pods(s.hostNamespace).Update(ctx, host, metav1.UpdateOptions{})
}

func (s *directSource) UpdateEphemeralContainers(ctx context.Context, host *corev1.Pod) (*corev1.Pod, error) {
	return s.client.CoreV1().Pods(s.hostNamespace).UpdateEphemeralContainers(ctx, host.Name, host, metav1.UpdateOptions{})
}

func (s *directSource) Client() kubernetes.Interface { return s.client }
func (s *directSource) HostNamespace() string        { return s.hostNamespace }
