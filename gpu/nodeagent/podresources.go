package nodeagent

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// DefaultPodResourcesSocket is the kubelet's pod-resources endpoint.
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// DeviceOwner is the container the kubelet gave a device to.
type DeviceOwner struct {
	Namespace, Pod, Container, Resource string
}

// Team is the owner's team, from its namespace (team-<name>); "" outside team
// namespaces.
func (o DeviceOwner) Team() string {
	t, ok := strings.CutPrefix(o.Namespace, contract.TeamNamespacePrefix)
	if !ok {
		return ""
	}
	return t
}

// DeviceOwners lists which container holds each NVIDIA device (GPU or MIG
// UUID), from the kubelet's pod-resources API. A shared GPU is held by its
// reservation pod, in the team's namespace.
func DeviceOwners(ctx context.Context, c podresourcesv1.PodResourcesListerClient) (map[string]DeviceOwner, error) {
	resp, err := c.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing pod resources from the kubelet: %w", err)
	}
	out := map[string]DeviceOwner{}
	for _, p := range resp.GetPodResources() {
		for _, ctr := range p.GetContainers() {
			for _, d := range ctr.GetDevices() {
				if !strings.HasPrefix(d.GetResourceName(), contract.NVIDIAPrefix) {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					out[id] = DeviceOwner{Namespace: p.GetNamespace(), Pod: p.GetName(), Container: ctr.GetName(), Resource: d.GetResourceName()}
				}
			}
		}
	}
	return out, nil
}

// DialPodResources connects to the kubelet's pod-resources socket.
func DialPodResources(socket string) (podresourcesv1.PodResourcesListerClient, func() error, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("kubelet pod-resources socket %s: %w", socket, err)
	}
	return podresourcesv1.NewPodResourcesListerClient(conn), conn.Close, nil
}
