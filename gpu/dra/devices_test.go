package dra

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// simulated is a node of four A100-80GB whose last two are served through
// DRA, one whole and one in MIG mode with the balanced layout.
func simulated(t *testing.T) inventory.Inventory {
	t.Helper()
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 4, DRA: 2, Seed: "node-a",
		MIG: []string{"all-disabled", "all-balanced", "all-disabled", "all-balanced"}})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestDevicesAreTheDRAGPUs(t *testing.T) {
	inv := simulated(t)
	devs := Devices(inv)
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
		if d.API.Name != d.Name {
			t.Errorf("device %s published as %s", d.Name, d.API.Name)
		}
		if errs := validation.IsDNS1123Label(d.Name); len(errs) > 0 {
			t.Errorf("device name %s is not a DNS label: %v", d.Name, errs)
		}
	}
	// GPUs 0 and 1 are the device plugin's; GPU 3's MIG devices by placement.
	want := []string{"gpu-2", "gpu-3-mig-1g10gb-0", "gpu-3-mig-1g10gb-1", "gpu-3-mig-2g20gb-2", "gpu-3-mig-3g40gb-4"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("device names -want +got:\n%s", diff)
	}

	whole, mig := devs[0], devs[1]
	if whole.UUID != inv.GPUs[2].UUID {
		t.Errorf("gpu-2 UUID %s, want GPU 2's %s", whole.UUID, inv.GPUs[2].UUID)
	}
	wantMIG := inv.GPUs[3].MIG.Instances[0].Devices[0].UUID
	if mig.UUID != wantMIG {
		t.Errorf("%s UUID %s, want %s", mig.Name, mig.UUID, wantMIG)
	}
	attr := func(d Device, name resourceapi.QualifiedName) resourceapi.DeviceAttribute {
		return d.API.Attributes[name]
	}
	for _, tc := range []struct {
		dev  Device
		name resourceapi.QualifiedName
		want resourceapi.DeviceAttribute
	}{
		{whole, "type", str("gpu")},
		{whole, "uuid", str(inv.GPUs[2].UUID)},
		{whole, "productName", str("NVIDIA-A100-SXM4-80GB")},
		{whole, "gpuvc.dev/simulated", resourceapi.DeviceAttribute{BoolValue: ptrTo(true)}},
		{mig, "type", str("mig")},
		{mig, "uuid", str(wantMIG)},
		{mig, "profile", str("1g.10gb")},
		{mig, "parentUUID", str(inv.GPUs[3].UUID)},
		{mig, "index", resourceapi.DeviceAttribute{IntValue: ptrTo(int64(3))}},
	} {
		if diff := cmp.Diff(tc.want, attr(tc.dev, tc.name)); diff != "" {
			t.Errorf("%s attribute %s -want +got:\n%s", tc.dev.Name, tc.name, diff)
		}
	}
	if got := whole.API.Capacity["memory"].Value; got.String() != "80Gi" {
		t.Errorf("gpu-2 memory capacity %s, want 80Gi (81920 MiB)", got.String())
	}
	if got := mig.API.Capacity["memory"].Value; got.Value() != inv.GPUs[3].MIG.Instances[0].MemoryMiB<<20 {
		t.Errorf("%s memory capacity %s, want the 1g.10gb instance's %d MiB", mig.Name, got.String(), inv.GPUs[3].MIG.Instances[0].MemoryMiB)
	}
}

// Versions the inventory knows (real GPUs) become version attributes in
// semantic-version form; unknown ones are left out.
func TestVersionAttributes(t *testing.T) {
	inv := inventory.Inventory{DriverVersion: "580.65.06", CUDAVersion: "13.0", GPUs: []inventory.GPU{
		{Index: 0, UUID: "GPU-0", Product: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559, ComputeCapability: "9.0", DRA: true},
	}}
	got := Devices(inv)[0].API.Attributes
	for name, want := range map[resourceapi.QualifiedName]string{"driverVersion": "580.65.6", "cudaDriverVersion": "13.0.0", "cudaComputeCapability": "9.0.0"} {
		if v := got[name].VersionValue; v == nil || *v != want {
			t.Errorf("attribute %s = %v, want version %s", name, v, want)
		}
	}
	if _, ok := got[contract.DRAAttributeSimulated]; ok {
		t.Error("a real GPU's device says it is simulated")
	}
	if _, ok := semver("not.a.version"); ok {
		t.Error("semver accepted not.a.version")
	}
}

// Each DeviceClass's selector, compiled and run by the scheduler's own CEL
// library, selects exactly the devices of its type.
func TestDeviceClassesSelectTheirType(t *testing.T) {
	devs := Devices(simulated(t))
	for _, class := range DeviceClasses() {
		want := map[string]string{contract.DeviceClassGPU: "gpu", contract.DeviceClassMIG: "mig"}[class.Name]
		if want == "" {
			t.Fatalf("unexpected class %s", class.Name)
		}
		expr := class.Spec.Selectors[0].CEL.Expression
		prog := dracel.GetCompiler(dracel.Features{}).CompileCELExpression(expr, dracel.Options{})
		if prog.Error != nil {
			t.Fatalf("class %s: %q does not compile: %v", class.Name, expr, prog.Error)
		}
		for _, d := range devs {
			got, _, err := prog.DeviceMatches(context.Background(), dracel.Device{Driver: contract.DRADriver, Attributes: d.API.Attributes, Capacity: d.API.Capacity})
			if err != nil {
				t.Fatal(err)
			}
			if typ := *d.API.Attributes["type"].StringValue; got != (typ == want) {
				t.Errorf("class %s selects %s (type %s): %v", class.Name, d.Name, typ, got)
			}
		}
		got, _, err := prog.DeviceMatches(context.Background(), dracel.Device{Driver: "other.example.com", Attributes: devs[0].API.Attributes})
		if err != nil || got {
			t.Errorf("class %s selects another driver's device: %v %v", class.Name, got, err)
		}
	}
}

func TestNodeSlice(t *testing.T) {
	devs := Devices(simulated(t))
	s, err := NodeSlice("kwok-0", "uid-1", devs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Driver != contract.DRADriver || *s.Spec.NodeName != "kwok-0" || s.Spec.Pool.Name != "kwok-0" ||
		s.Spec.Pool.ResourceSliceCount != 1 || len(s.Spec.Devices) != len(devs) {
		t.Errorf("slice spec %+v: want driver %s, node and pool kwok-0, one slice of %d devices", s.Spec, contract.DRADriver, len(devs))
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != "uid-1" || s.OwnerReferences[0].Kind != "Node" {
		t.Errorf("owner %+v: want Node kwok-0", s.OwnerReferences)
	}
	many := make([]Device, resourceapi.ResourceSliceMaxDevices+1)
	if _, err := NodeSlice("big", "", many); err == nil {
		t.Error("a slice of 129 devices was built")
	}
}

func ptrTo[T any](v T) *T { return &v }
