package teamqueue_test

import (
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
)

// deviceKubelet stands in for a kwok node's kubelet where the node agent meets
// it: its device manager gives each pod bound to the node a healthy free GPU
// (the device plugin's Unhealthy GPUs are skipped, as the kubelet skips them),
// and its pod-resources API, served on a unix socket as the kubelet serves it,
// says which pod holds which GPU. kwok assigns no devices; the test asks for
// an assignment (allocate) once the scheduler has bound a pod.
type deviceKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	node string
	gpus []string // GPU UUIDs by index

	mu        sync.Mutex
	unhealthy map[string]bool
	holder    map[string]*corev1.Pod // GPU UUID → the pod it was given to
}

// serveDeviceKubelet serves node's pod-resources API for the GPUs gpus and
// returns the kubelet and a client dialled as the agent dials the socket.
func serveDeviceKubelet(t *testing.T, node string, gpus []string) (*deviceKubelet, podresourcesv1.PodResourcesListerClient) {
	t.Helper()
	k := &deviceKubelet{node: node, gpus: gpus, unhealthy: map[string]bool{}, holder: map[string]*corev1.Pod{}}
	dir, err := os.MkdirTemp("", "gpuvc-kubelet-") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "kubelet.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	client, closeConn, err := nodeagent.DialPodResources(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeConn() })
	return k, client
}

// setHealth is the device plugin's side: the agent's OnUnhealthy and
// OnHealthy hooks.
func (k *deviceKubelet) setHealth(uuid string, healthy bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.unhealthy[uuid] = !healthy
}

// allocate gives the pod (bound to the node) the first healthy GPU no live pod
// holds, as the kubelet's device manager does at admission, and returns it.
// A GPU whose pod is gone or finished is free again.
func (k *deviceKubelet) allocate(ctx context.Context, t *testing.T, p *corev1.Pod) string {
	t.Helper()
	if p.Spec.NodeName != k.node {
		t.Fatalf("pod %s/%s is on node %q, not %s", p.Namespace, p.Name, p.Spec.NodeName, k.node)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for uuid, held := range k.holder {
		cur, err := host.Client.CoreV1().Pods(held.Namespace).Get(ctx, held.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err), err == nil && (cur.UID != held.UID || cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed):
			delete(k.holder, uuid)
		case err != nil:
			t.Fatal(err)
		}
	}
	for _, uuid := range k.gpus {
		if _, taken := k.holder[uuid]; !taken && !k.unhealthy[uuid] {
			k.holder[uuid] = p.DeepCopy()
			return uuid
		}
	}
	t.Fatalf("no healthy free GPU on %s for pod %s/%s (held: %v, unhealthy: %v)", k.node, p.Namespace, p.Name, k.holder, k.unhealthy)
	return ""
}

// List answers what the kubelet's pod-resources API answers: each pod's
// container and the NVIDIA devices it was given.
func (k *deviceKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*podresourcesv1.PodResources
	for _, uuid := range slices.Sorted(maps.Keys(k.holder)) {
		p := k.holder[uuid]
		out = append(out, &podresourcesv1.PodResources{Name: p.Name, Namespace: p.Namespace, Containers: []*podresourcesv1.ContainerResources{{
			Name:    p.Spec.Containers[0].Name,
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: string(contract.ResourceGPU), DeviceIds: []string{uuid}}},
		}}})
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: out}, nil
}
