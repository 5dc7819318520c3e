package dra

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
)

func testDriver(t *testing.T) (*driver, string) {
	t.Helper()
	dir := t.TempDir()
	return newDriver("node-a", Devices(simulated(t)), cdiDir(dir), logr.Discard()), dir
}

// claim allocated on pool with one result per request:device pair.
func claim(uid, pool string, results ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-" + uid, UID: types.UID(uid)}}
	c.Status.Allocation = &resourceapi.AllocationResult{}
	for _, r := range results {
		req, dev, _ := strings.Cut(r, ":")
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
			resourceapi.DeviceRequestAllocationResult{Request: req, Driver: "gpu.nvidia.com", Pool: pool, Device: dev})
	}
	return c
}

func prepare(t *testing.T, d *driver, claims ...*resourceapi.ResourceClaim) map[types.UID]kubeletplugin.PrepareResult {
	t.Helper()
	res, err := d.PrepareResourceClaims(context.Background(), claims)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(claims) {
		t.Fatalf("%d results for %d claims", len(res), len(claims))
	}
	return res
}

// The CDI spec of a claim gives each device's container its UUID:
// NVIDIA_VISIBLE_DEVICES lists the request's devices, GPUVC_DRA_DEVICE_<name>
// each one; the kubelet gets one CDI device ID per device.
func TestPrepareWritesTheClaimsCDISpec(t *testing.T) {
	d, dir := testDriver(t)
	gpu := d.devices["gpu-2"]
	mig := d.devices["gpu-3-mig-1g10gb-0"]
	res := prepare(t, d, claim("uid-1", "node-a", "train:gpu-2", "infer:gpu-3-mig-1g10gb-0"))["uid-1"]
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	wantDevices := []kubeletplugin.Device{
		{Requests: []string{"train"}, PoolName: "node-a", DeviceName: "gpu-2", CDIDeviceIDs: []string{"k8s.gpu.gpuvc.dev/device=uid-1-gpu-2"}},
		{Requests: []string{"infer"}, PoolName: "node-a", DeviceName: "gpu-3-mig-1g10gb-0", CDIDeviceIDs: []string{"k8s.gpu.gpuvc.dev/device=uid-1-gpu-3-mig-1g10gb-0"}},
	}
	if diff := cmp.Diff(wantDevices, res.Devices); diff != "" {
		t.Errorf("prepared devices -want +got:\n%s", diff)
	}

	b, err := os.ReadFile(filepath.Join(dir, "gpuvc-dra-uid-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"cdiVersion": "0.6.0",
		"kind":       "k8s.gpu.gpuvc.dev/device",
		"devices": []any{
			map[string]any{
				"name":           "uid-1-gpu-2",
				"annotations":    map[string]any{"gpuvc.dev/dra-device": "gpu-2"},
				"containerEdits": map[string]any{"env": []any{"NVIDIA_VISIBLE_DEVICES=" + gpu.UUID, "GPUVC_DRA_DEVICE_GPU_2=" + gpu.UUID}},
			},
			map[string]any{
				"name":           "uid-1-gpu-3-mig-1g10gb-0",
				"annotations":    map[string]any{"gpuvc.dev/dra-device": "gpu-3-mig-1g10gb-0"},
				"containerEdits": map[string]any{"env": []any{"NVIDIA_VISIBLE_DEVICES=" + mig.UUID, "GPUVC_DRA_DEVICE_GPU_3_MIG_1G10GB_0=" + mig.UUID}},
			},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CDI spec -want +got:\n%s", diff)
	}
	if fi, err := os.Stat(filepath.Join(dir, "gpuvc-dra-uid-1.json")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("spec file mode %v (%v): the runtime must read it", fi.Mode(), err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// Two devices of one request: each sets NVIDIA_VISIBLE_DEVICES to both.
func TestPrepareOneRequestTwoDevices(t *testing.T) {
	d, dir := testDriver(t)
	prepare(t, d, claim("uid-1", "node-a", "r:gpu-3-mig-1g10gb-0", "r:gpu-3-mig-1g10gb-1"))
	var spec cdiSpec
	b, _ := os.ReadFile(filepath.Join(dir, "gpuvc-dra-uid-1.json"))
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	both := "NVIDIA_VISIBLE_DEVICES=" + d.devices["gpu-3-mig-1g10gb-0"].UUID + "," + d.devices["gpu-3-mig-1g10gb-1"].UUID
	for _, dev := range spec.Devices {
		if dev.ContainerEdits.Env[0] != both {
			t.Errorf("device %s env %v, want %s", dev.Name, dev.ContainerEdits.Env, both)
		}
	}
}

// A claim is refused a device of another pool, one the node does not
// publish, or one another claim holds, even after a restart of the driver
// (the holders are read back from the specs); preparing again is
// idempotent, unprepare frees the device and is idempotent too.
func TestPrepareRefusals(t *testing.T) {
	d, dir := testDriver(t)
	for _, tc := range []struct {
		claim *resourceapi.ResourceClaim
		want  string
	}{
		{claim("uid-x", "node-b", "r:gpu-2"), "device gpu-2 of pool node-b is not on this node (pool node-a)"},
		{claim("uid-x", "node-a", "r:gpu-0"), "device gpu-0 is not one this node publishes"},
		{&resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unallocated", UID: "uid-u"}}, "ns/unallocated: not allocated"},
	} {
		res := prepare(t, d, tc.claim)[tc.claim.UID]
		if res.Err == nil || !strings.Contains(res.Err.Error(), tc.want) {
			t.Errorf("claim %s: error %v, want %q", tc.claim.Name, res.Err, tc.want)
		}
	}

	first := claim("uid-1", "node-a", "r:gpu-2")
	if res := prepare(t, d, first)["uid-1"]; res.Err != nil {
		t.Fatal(res.Err)
	}
	restarted := newDriver("node-a", Devices(simulated(t)), cdiDir(dir), logr.Discard())
	// Another claim for the held device, with one for a free device in the same call.
	res := prepare(t, restarted, claim("uid-2", "node-a", "r:gpu-2"), claim("uid-3", "node-a", "r:gpu-3-mig-3g40gb-4"))
	if err := res["uid-2"].Err; err == nil || !strings.Contains(err.Error(), "device gpu-2 is prepared for claim uid-1") {
		t.Errorf("second claim on gpu-2: error %v, want it refused", err)
	}
	if err := res["uid-3"].Err; err != nil {
		t.Errorf("claim on a free device refused: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gpuvc-dra-uid-2.json")); !os.IsNotExist(err) {
		t.Errorf("a refused claim left a CDI spec (%v)", err)
	}
	admin := claim("uid-admin", "node-a", "r:gpu-2")
	admin.Status.Allocation.Devices.Results[0].AdminAccess = ptr.To(true)
	if res := prepare(t, restarted, admin)["uid-admin"]; res.Err != nil {
		t.Errorf("admin access to a held device refused: %v", res.Err)
	}
	if res := prepare(t, restarted, first)["uid-1"]; res.Err != nil {
		t.Errorf("preparing the holder again: %v", res.Err)
	}

	un, err := restarted.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: "uid-1"}, {UID: "uid-never"}})
	if err != nil || un["uid-1"] != nil || un["uid-never"] != nil {
		t.Fatalf("unprepare: %v %v", un, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gpuvc-dra-uid-1.json")); !os.IsNotExist(err) {
		t.Errorf("unprepare left the CDI spec (%v)", err)
	}
	if res := prepare(t, restarted, claim("uid-2", "node-a", "r:gpu-2"))["uid-2"]; res.Err != nil {
		t.Errorf("gpu-2 still held after unprepare: %v", res.Err)
	}
}

// Results of other drivers in the same claim are not this driver's to prepare.
func TestPrepareSkipsOtherDrivers(t *testing.T) {
	d, _ := testDriver(t)
	c := claim("uid-1", "node-a", "r:gpu-2")
	c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
		resourceapi.DeviceRequestAllocationResult{Request: "nic", Driver: "nic.example.com", Pool: "node-a", Device: "eth0"})
	res := prepare(t, d, c)["uid-1"]
	if res.Err != nil || len(res.Devices) != 1 || res.Devices[0].DeviceName != "gpu-2" {
		t.Errorf("prepare = %+v, want gpu-2 only", res)
	}
}

func TestDeviceEnv(t *testing.T) {
	if got := DeviceEnv("gpu-3-mig-1g10gb-0"); got != "GPUVC_DRA_DEVICE_GPU_3_MIG_1G10GB_0" {
		t.Errorf("DeviceEnv = %s", got)
	}
}
