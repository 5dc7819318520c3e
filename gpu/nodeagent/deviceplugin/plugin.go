package deviceplugin

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// plugin serves one resource's devices to the kubelet.
type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	res    Resource
	health *Health // nil: always healthy
}

var _ pluginapi.DevicePluginServer = (*plugin)(nil)

// options are sent at registration and from GetDevicePluginOptions.
func options() *pluginapi.DevicePluginOptions {
	return &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true}
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return options(), nil
}

// ListAndWatch sends the devices with their health, then again after every
// health change, until the kubelet or the server ends the stream.
func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	for {
		devs := make([]*pluginapi.Device, 0, len(p.res.DeviceIDs))
		var changed <-chan struct{}
		for _, id := range p.res.DeviceIDs {
			ok, ch := p.health.healthy(id)
			state := pluginapi.Healthy
			if !ok {
				state = pluginapi.Unhealthy
			}
			devs = append(devs, &pluginapi.Device{ID: id, Health: state})
			changed = ch
		}
		if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-changed: // nil without health: blocks
		}
	}
}

// GetPreferredAllocation prefers the devices that must be included, then the
// available ones in inventory order (GPU index, then MIG placement), so
// repeated allocations are deterministic.
func (p *plugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, cr := range req.GetContainerRequests() {
		size := int(cr.GetAllocationSize())
		ids := slices.Clone(cr.GetMustIncludeDeviceIDs())
		for _, id := range p.res.DeviceIDs {
			if len(ids) >= size {
				break
			}
			if slices.Contains(cr.GetAvailableDeviceIDs(), id) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) < size {
			return nil, status.Errorf(codes.InvalidArgument, "%s: %d devices requested, only %d available", p.res.Name, size, len(ids))
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

// Allocate gives each container NVIDIA_VISIBLE_DEVICES=<its device UUIDs>.
func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		ids := cr.GetDevicesIds()
		if len(ids) == 0 {
			return nil, status.Errorf(codes.InvalidArgument, "%s: allocation of no devices", p.res.Name)
		}
		for _, id := range ids {
			if !slices.Contains(p.res.DeviceIDs, id) {
				return nil, status.Errorf(codes.InvalidArgument, "%s: unknown device %q", p.res.Name, id)
			}
		}
		// The allocated device IDs, as the NVIDIA device plugin gives them with
		// its default envvar strategy.
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{contract.EnvVisibleDevices: strings.Join(ids, ",")},
		})
	}
	return resp, nil
}

// PreStartContainer has nothing to prepare (and is not requested in options).
func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}
