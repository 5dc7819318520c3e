package syncer

import (
	"testing"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// draPolicy is fraud with spec.dra: gpu.nvidia.com only, 4 devices per pod, a
// GPU ceiling of 6.
func draPolicy() *TeamPolicy {
	p := fraudPolicy()
	p.DRA, p.AllowedDeviceClasses, p.GPUCeiling = true, []string{"gpu.nvidia.com"}, 6
	return p
}

func draInput(pod *testobj.PodWrapper, claims ...PodClaim) *Input {
	in := input(pod.Obj())
	in.Policy, in.Claims, in.DevicesUsed = draPolicy(), claims, -1
	return in
}

func TestCheckResourceClaims(t *testing.T) {
	runCheckTable(t, checkResourceClaims, map[string]checkCase{
		"no claims": {pod: pod().GPUs("1").Obj()},
		"claim of a team without spec.dra": {pod: pod().ResourceClaim("gpu", "any-gpu").Obj(), reason: ReasonResourceClaim,
			says: []string{"spec.resourceClaims [gpu]", "Dynamic Resource Allocation", "limit: GPUs through nvidia.com/gpu", "claims only for teams with spec.dra"}},
		"claim of a spec.dra team": {pod: pod().ResourceClaim("gpu", "any-gpu").Obj(), edit: func(in *Input) { in.Policy = draPolicy() }},
		"claim of a queueing spec.dra team": {pod: pod().ResourceClaim("gpu", "any-gpu").Obj(), reason: ReasonResourceClaim,
			edit: func(in *Input) { in.Policy = draPolicy(); in.Policy.KueueQueue = "team" },
			says: []string{"Kueue v0.17.0 counts no DRA devices", "limit: DRA claims only for teams without spec.queueing"}},
		"claim on the control plane": {pod: pod().ResourceClaim("gpu", "any-gpu").Obj(), reason: ReasonResourceClaim,
			edit: func(in *Input) { in.Policy = draPolicy(); in.Role = contract.RoleControlPlane },
			says: []string{"vCluster control plane", "limit: no devices for control-plane pods"}},
	})
}

func TestCheckClaims(t *testing.T) {
	gpu := "gpu.nvidia.com"
	cases := map[string]struct {
		spec   *testobj.ClaimSpecWrapper
		policy func(*TeamPolicy)
		used   int64
		reason string
		says   []string
	}{
		"one GPU":                  {spec: testobj.ClaimSpec().Devices("gpu", gpu, 1)},
		"a narrowing CEL selector": {spec: testobj.ClaimSpec().Devices("gpu", gpu, 1).Selector(`device.attributes["gpu.nvidia.com"].productName == "H100"`)},
		"team without spec.dra": {spec: testobj.ClaimSpec().Devices("gpu", gpu, 1), policy: func(p *TeamPolicy) { p.DRA = false },
			reason: ReasonResourceClaim, says: []string{"ResourceClaim c", "team fraud does not use it", "limit: the Team's spec.dra is unset"}},
		"another class": {spec: testobj.ClaimSpec().Devices("gpu", "gpu.other.example.com", 1), reason: ReasonDeviceClassNotAllowed,
			says: []string{"spec.devices.requests[0].exactly.deviceClassName=gpu.other.example.com", "limit: spec.dra.deviceClasses [gpu.nvidia.com]"}},
		"allocationMode All": {spec: testobj.ClaimSpec().AllDevices("all", gpu), reason: ReasonDeviceAllocationAll,
			says: []string{"spec.devices.requests[0].exactly.allocationMode=All", "limit: allocationMode ExactCount with a count"}},
		"adminAccess": {spec: testobj.ClaimSpec().Devices("gpu", gpu, 1).AdminAccess(), reason: ReasonDeviceAdminAccess,
			says: []string{"spec.devices.requests[0].exactly.adminAccess=true", "limit: no adminAccess in team namespaces"}},
		"device toleration": {spec: testobj.ClaimSpec().Devices("gpu", gpu, 1).TolerateAll(), reason: ReasonDeviceToleration,
			says: []string{"spec.devices.requests[0].exactly.tolerations (1)", "limit: no device tolerations"}},
		"firstAvailable smuggling another class": {spec: testobj.ClaimSpec().FirstAvailable("gpu", testobj.Sub("own", gpu, 1), testobj.Sub("foreign", "gpu.other.example.com", 1)),
			reason: ReasonDeviceClassNotAllowed, says: []string{"spec.devices.requests[0].firstAvailable[1].deviceClassName=gpu.other.example.com"}},
		"firstAvailable smuggling All": {spec: testobj.ClaimSpec().FirstAvailable("gpu", testobj.Sub("one", gpu, 1), testobj.AllSub("all", gpu)),
			reason: ReasonDeviceAllocationAll, says: []string{"spec.devices.requests[0].firstAvailable[1].allocationMode=All"}},
		"over the per-pod bound in two requests": {spec: testobj.ClaimSpec().Devices("a", gpu, 3).Devices("b", gpu, 2), reason: ReasonDeviceCountAboveLimit,
			says: []string{"asks for up to 5 devices", "limit: maxGPUsPerPod=4"}},
		"firstAvailable counts its largest": {spec: testobj.ClaimSpec().FirstAvailable("gpu", testobj.Sub("two", gpu, 2), testobj.Sub("five", gpu, 5)),
			reason: ReasonDeviceCountAboveLimit, says: []string{"asks for up to 5 devices"}},
		"over the ceiling": {spec: testobj.ClaimSpec().Devices("gpu", gpu, 2), used: 5, reason: ReasonGPUCeiling,
			says: []string{"asks for 2 device(s)", "already holds 5", "limit: 6, spec.quota.gpus, for nvidia.com/gpu and DRA devices together"}},
		"at the ceiling": {spec: testobj.ClaimSpec().Devices("gpu", gpu, 2), used: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := draPolicy()
			if tc.policy != nil {
				tc.policy(p)
			}
			r := RunClaimChecks(&ClaimInput{Policy: p, Kind: KindResourceClaim, Name: "c", Path: "spec", Spec: tc.spec.Obj(), DevicesUsed: tc.used})
			if tc.reason == "" {
				if r.Denied() {
					t.Fatalf("refused: %s", r.Message())
				}
				return
			}
			if !r.Denied() || r.Denials[0].Reason != tc.reason {
				t.Fatalf("got %v (%s), want %s first", denialReasons(r), r.Message(), tc.reason)
			}
			for _, w := range tc.says {
				if !contains(r.Denials[0].Message, w) {
					t.Errorf("message %q does not mention %q", r.Denials[0].Message, w)
				}
			}
		})
	}
}

// A template's fields are named under spec.spec, and the ceiling (charged when
// the claim is made) does not apply to it.
func TestCheckClaimTemplate(t *testing.T) {
	spec := testobj.ClaimSpec().Devices("gpu", "gpu.other.example.com", 1).Obj()
	r := RunClaimChecks(&ClaimInput{Policy: draPolicy(), Kind: KindResourceClaimTemplate, Name: "t", Path: "spec.spec", Spec: spec, DevicesUsed: 100})
	if len(r.Denials) != 1 || !contains(r.Denials[0].Message, "ResourceClaimTemplate t: spec.spec.devices.requests[0].exactly.deviceClassName=gpu.other.example.com") {
		t.Fatalf("got %s", r.Message())
	}
}

func TestCheckPodClaims(t *testing.T) {
	gpu := "gpu.nvidia.com"
	twoGPUs := PodClaim{Name: "gpu", Kind: KindResourceClaimTemplate, Object: "two", Spec: testobj.ClaimSpec().Devices("gpu", gpu, 2).Obj()}
	cases := map[string]struct {
		in     *Input
		reason string
		says   []string
	}{
		"template of two GPUs": {in: draInput(pod().ResourceClaim("gpu", "two"), twoGPUs)},
		"claim not found": {in: draInput(pod().NamedResourceClaim("gpu", "gone"), PodClaim{Name: "gpu", Kind: KindResourceClaim, Object: "gone"}),
			reason: ReasonClaimNotFound, says: []string{"spec.resourceClaims[0] (gpu) names ResourceClaim gone", "not in namespace team-fraud", "limit: a pod's claims come from its own namespace"}},
		"claim of another class, made before the team lost it": {in: draInput(pod().NamedResourceClaim("gpu", "old"),
			PodClaim{Name: "gpu", Kind: KindResourceClaim, Object: "old", Spec: testobj.ClaimSpec().Devices("gpu", "gpu.old.example.com", 1).Obj()}),
			reason: ReasonDeviceClassNotAllowed, says: []string{"spec.resourceClaims[0] (gpu) names ResourceClaim old: spec.devices.requests[0].exactly.deviceClassName=gpu.old.example.com"}},
		"claims and GPUs over the per-pod bound": {in: draInput(pod().GPUs("1").ResourceClaim("gpu", "two").ResourceClaim("more", "two"), twoGPUs,
			PodClaim{Name: "more", Kind: KindResourceClaimTemplate, Object: "two", Spec: twoGPUs.Spec}),
			reason: ReasonGPUCountAboveLimit, says: []string{"holds 1 GPU device(s) through resources.limits and up to 4 through its claims", "limit: maxGPUsPerPod=4, device-plugin GPUs and DRA devices together"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, message, denied := checkPodClaims(tc.in)
			if denied != (tc.reason != "") || reason != tc.reason {
				t.Fatalf("got (%q, %q, denied=%v), want %q", reason, message, denied, tc.reason)
			}
			for _, w := range tc.says {
				if !contains(message, w) {
					t.Errorf("message %q does not mention %q", message, w)
				}
			}
		})
	}
}

// The ceiling counts a pod's whole GPUs and its templates' devices (new
// claims), not a named claim (counted when it was made).
func TestCheckPodCeiling(t *testing.T) {
	gpu := "gpu.nvidia.com"
	two := testobj.ClaimSpec().Devices("gpu", gpu, 2).Obj()
	for name, tc := range map[string]struct {
		in     *Input
		used   int64
		denied bool
	}{
		"template within":    {in: draInput(pod().ResourceClaim("gpu", "two"), PodClaim{"gpu", KindResourceClaimTemplate, "two", two}), used: 4},
		"template beyond":    {in: draInput(pod().ResourceClaim("gpu", "two"), PodClaim{"gpu", KindResourceClaimTemplate, "two", two}), used: 5, denied: true},
		"GPU beyond":         {in: draInput(pod().GPUs("2")), used: 5, denied: true},
		"named claim, known": {in: draInput(pod().NamedResourceClaim("gpu", "two"), PodClaim{"gpu", KindResourceClaim, "two", two}), used: 6},
	} {
		t.Run(name, func(t *testing.T) {
			tc.in.DevicesUsed = tc.used
			reason, message, denied := checkPodCeiling(tc.in)
			if denied != tc.denied {
				t.Fatalf("got (%q, %q, denied=%v), want denied=%v", reason, message, denied, tc.denied)
			}
			if denied && !contains(message, "limit: 6, spec.quota.gpus") {
				t.Errorf("message %q names no limit", message)
			}
		})
	}
}
