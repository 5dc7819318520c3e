package deviceplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin/fakekubelet"
)

func startKubelet(t *testing.T, dir string) *fakekubelet.Kubelet {
	t.Helper()
	k, err := fakekubelet.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Stop)
	return k
}

// waitRegistrations waits (20 s at most) until every resource has registered.
func waitRegistrations(t *testing.T, k *fakekubelet.Kubelet, names []string) map[string]*pluginapi.RegisterRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	regs, err := k.WaitRegistrations(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	return regs
}

// shortDir is a temporary folder with a short path: unix socket paths are
// limited to 107 bytes and t.TempDir embeds the test name.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gpuvc-dp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func dial(t *testing.T, dir, endpoint string) pluginapi.DevicePluginClient {
	t.Helper()
	c, conn, err := (&fakekubelet.Kubelet{Dir: dir}).Dial(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return c
}

// testInventory: GPU 0 in MIG all-balanced (2x1g.10gb, 2g.20gb, 3g.40gb), GPU 1 whole.
func testInventory(t *testing.T) inventory.Inventory {
	t.Helper()
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 2, MIG: []string{"all-balanced", "all-disabled"}, Seed: "worker-1"})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// wantDevices lists each resource's device UUIDs straight from the inventory.
func wantDevices(inv inventory.Inventory) map[string][]string {
	want := map[string][]string{"nvidia.com/gpu": {inv.GPUs[1].UUID}}
	for _, gi := range inv.GPUs[0].MIG.Instances {
		r := "nvidia.com/mig-" + gi.Profile
		want[r] = append(want[r], gi.Devices[0].UUID)
	}
	return want
}

func listDevices(ctx context.Context, t *testing.T, c pluginapi.DevicePluginClient) ([]string, grpc.ServerStreamingClient[pluginapi.ListAndWatchResponse]) {
	t.Helper()
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range resp.Devices {
		if d.Health != pluginapi.Healthy {
			t.Errorf("device %s is %s, want Healthy", d.ID, d.Health)
		}
		ids = append(ids, d.ID)
	}
	return ids, stream
}

func TestServeRegistersServesAndReregisters(t *testing.T) {
	dir := shortDir(t)
	inv := testInventory(t)
	want := wantDevices(inv)
	names := []string{"nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"}

	// The resources agree with the capacity the real plugin would advertise.
	capacity, err := inventory.Capacity(inv, inventory.StrategyMixed)
	if err != nil {
		t.Fatal(err)
	}
	for r, n := range capacity {
		if int64(len(want[r])) != n {
			t.Fatalf("capacity %s = %d, devices %v", r, n, want[r])
		}
	}

	kubelet := startKubelet(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Options{Dir: dir, Inventory: inv}) }()

	regs := waitRegistrations(t, kubelet, names)
	for _, name := range names {
		r := regs[name]
		wantEndpoint := "gpuvc-" + strings.TrimPrefix(name, "nvidia.com/") + ".sock"
		if r.Version != pluginapi.Version || r.Endpoint != wantEndpoint || !r.GetOptions().GetGetPreferredAllocationAvailable() {
			t.Errorf("registration of %s = version %q endpoint %q options %v, want %q %q with preferred allocation",
				name, r.Version, r.Endpoint, r.Options, pluginapi.Version, wantEndpoint)
		}
	}

	// Dial every plugin as the kubelet does.
	for _, name := range names {
		c := dial(t, dir, regs[name].Endpoint)
		ids, _ := listDevices(ctx, t, c)
		if diff := cmp.Diff(want[name], ids); diff != "" {
			t.Errorf("%s ListAndWatch -want +got:\n%s", name, diff)
		}
		resp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: want[name]}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.ContainerResponses[0].Envs[contract.EnvVisibleDevices]; got != strings.Join(want[name], ",") {
			t.Errorf("%s Allocate env = %q, want %q", name, got, strings.Join(want[name], ","))
		}
	}
	gpu := dial(t, dir, regs["nvidia.com/gpu"].Endpoint)
	opts, err := gpu.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil || opts.PreStartRequired || !opts.GetPreferredAllocationAvailable {
		t.Errorf("GetDevicePluginOptions = %v, %v", opts, err)
	}
	if _, err := gpu.PreStartContainer(ctx, &pluginapi.PreStartContainerRequest{DevicesIds: want["nvidia.com/gpu"]}); err != nil {
		t.Errorf("PreStartContainer: %v", err)
	}
	_, err = gpu.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"GPU-not-mine"}}}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"GPU-not-mine"`) {
		t.Errorf("Allocate of an unknown device = %v, want InvalidArgument naming it", err)
	}
	_, oldStream := listDevices(ctx, t, gpu)

	// The kubelet restarts: it stops, deletes the plugin sockets and
	// recreates kubelet.sock. The plugin must register again.
	kubelet.Stop()
	for _, name := range names {
		if err := os.Remove(filepath.Join(dir, regs[name].Endpoint)); err != nil {
			t.Fatal(err)
		}
	}
	restarted := startKubelet(t, dir)
	regs = waitRegistrations(t, restarted, names)
	if _, err := oldStream.Recv(); err == nil {
		t.Error("the ListAndWatch stream of the old plugin generation is still open")
	}
	c := dial(t, dir, regs["nvidia.com/mig-1g.10gb"].Endpoint)
	if ids, _ := listDevices(ctx, t, c); !cmp.Equal(want["nvidia.com/mig-1g.10gb"], ids) {
		t.Errorf("after the kubelet restart ListAndWatch = %v, want %v", ids, want["nvidia.com/mig-1g.10gb"])
	}
	if r, ok := kubelet.Pending(); ok {
		t.Errorf("the stopped kubelet got a registration of %s", r.ResourceName)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v after cancel, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, regs[name].Endpoint)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket of %s left behind: %v", name, err)
		}
	}
}

// A plugin started before the kubelet registers once the kubelet is up.
func TestServeWaitsForKubelet(t *testing.T) {
	dir := shortDir(t)
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-H100-80GB-HBM3", Count: 4, Seed: "h"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Options{Dir: dir, Inventory: inv, RetryInterval: 20 * time.Millisecond}) }()
	// Wait until the plugin serves (it has then tried to register and failed).
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if _, err := dial(t, dir, "gpuvc-gpu.sock").GetDevicePluginOptions(wctx, &pluginapi.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("the plugin never served: %v", err)
	}
	kubelet := startKubelet(t, dir)
	regs := waitRegistrations(t, kubelet, []string{"nvidia.com/gpu"})
	ids, _ := listDevices(ctx, t, dial(t, dir, regs["nvidia.com/gpu"].Endpoint))
	if len(ids) != 4 {
		t.Errorf("devices = %v, want 4", ids)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
}

func TestServeErrors(t *testing.T) {
	dir := shortDir(t)
	tests := map[string]struct {
		opts Options
		want string
	}{
		"missing folder": {Options{Dir: filepath.Join(dir, "nope"), Inventory: testInventory(t)}, "nope is not a folder the kubelet uses"},
		"no devices":     {Options{Dir: dir, Inventory: inventory.Inventory{}}, "nothing to advertise"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := Serve(context.Background(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Serve = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPreferredAllocation(t *testing.T) {
	p := &plugin{res: Resource{Name: "nvidia.com/gpu", DeviceIDs: []string{"GPU-0", "GPU-1", "GPU-2", "GPU-3"}}}
	tests := map[string]struct {
		req     *pluginapi.ContainerPreferredAllocationRequest
		want    []string
		wantErr string
	}{
		"inventory order": {req: &pluginapi.ContainerPreferredAllocationRequest{
			AvailableDeviceIDs: []string{"GPU-3", "GPU-1", "GPU-2"}, AllocationSize: 2}, want: []string{"GPU-1", "GPU-2"}},
		"must include first": {req: &pluginapi.ContainerPreferredAllocationRequest{
			AvailableDeviceIDs: []string{"GPU-0", "GPU-1", "GPU-3"}, MustIncludeDeviceIDs: []string{"GPU-3"}, AllocationSize: 2},
			want: []string{"GPU-3", "GPU-0"}},
		"too few": {req: &pluginapi.ContainerPreferredAllocationRequest{
			AvailableDeviceIDs: []string{"GPU-0"}, AllocationSize: 2}, wantErr: "2 devices requested, only 1 available"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp, err := p.GetPreferredAllocation(context.Background(), &pluginapi.PreferredAllocationRequest{
				ContainerRequests: []*pluginapi.ContainerPreferredAllocationRequest{tc.req}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, resp.ContainerResponses[0].DeviceIDs); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestResourcesEndpoints(t *testing.T) {
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"1g.6gb+me,2g.12gb,1g.6gb"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range Resources(inv) {
		got = append(got, r.Name+" "+r.Endpoint)
	}
	want := []string{
		"nvidia.com/mig-1g.6gb gpuvc-mig-1g.6gb.sock",
		"nvidia.com/mig-1g.6gb.me gpuvc-mig-1g.6gb.me.sock",
		"nvidia.com/mig-2g.12gb gpuvc-mig-2g.12gb.sock",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}

// A new kubelet that leaves the plugin sockets alone gets the registrations
// again from the same servers: no restart, open streams stay open.
func TestServeReregistersWithoutRestart(t *testing.T) {
	dir := shortDir(t)
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-A100-SXM4-40GB", Count: 2, Seed: "k"})
	if err != nil {
		t.Fatal(err)
	}
	first := startKubelet(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var logged []string
	ctx = logr.NewContext(ctx, funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{}))
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Options{Dir: dir, Inventory: inv}) }()
	regs := waitRegistrations(t, first, []string{"nvidia.com/gpu"})
	_, stream := listDevices(ctx, t, dial(t, dir, regs["nvidia.com/gpu"].Endpoint))

	first.Stop()
	second := startKubelet(t, dir)
	waitRegistrations(t, second, []string{"nvidia.com/gpu"})
	mu.Lock()
	all := strings.Join(logged, "\n")
	mu.Unlock()
	if strings.Contains(all, "restarting the device plugins") || !strings.Contains(all, "registering again") {
		t.Fatalf("want a registration without a restart; log:\n%s", all)
	}
	// The first stream is still served: cancel the plugin and it ends.
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable && status.Code(err) != codes.Canceled {
		t.Errorf("the first ListAndWatch ended with %v, want the server's shutdown", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
}
