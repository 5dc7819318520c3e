package syncer

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer/migmap"
)

// fraudPolicy is the policy the unit tests judge pods against.
func fraudPolicy() *TeamPolicy {
	return &TeamPolicy{
		Team: "fraud", Namespace: "team-fraud", Pool: "a100",
		PoolGPUProduct: "NVIDIA-A100-SXM4-80GB", PoolGPUMemoryMiB: 81920,
		MaxGPUsPerPod: 4, AllowedMIGProfiles: []string{"1g.10gb", "2g.20gb"},
		FractionsEnabled: true, VClusterName: "fraud",
	}
}

// knownNodes is the node → pool table of the default pools.
var knownNodes = map[string]string{"system-0": "system", "a100-0": "a100", "a100-mig-0": "a100", "h100-0": "h100", "ghost": ""}

func input(pod *corev1.Pod) *Input {
	return &Input{Policy: fraudPolicy(), Pod: pod, Role: contract.RoleWorkload, MIG: migmap.Catalog{}, NodePools: knownNodes}
}

func pod() *testobj.PodWrapper { return testobj.Pod("p", "team-fraud") }

func reasonsOf(notes []Note) []string {
	var out []string
	for _, n := range notes {
		out = append(out, n.Reason)
	}
	return out
}

func denialReasons(r Result) []string {
	var out []string
	for _, d := range r.Denials {
		out = append(out, d.Reason)
	}
	return out
}

// checkCase is a row of a check table: the reason wanted ("" = allowed) and
// words its message must contain.
type checkCase struct {
	pod    *corev1.Pod
	edit   func(*Input)
	reason string
	says   []string
}

func runCheckTable(t *testing.T, check Check, cases map[string]checkCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			if tc.edit != nil {
				tc.edit(in)
			}
			reason, message, denied := check(in)
			if denied != (tc.reason != "") || reason != tc.reason {
				t.Fatalf("got (%q, %q, denied=%v), want reason %q", reason, message, denied, tc.reason)
			}
			for _, w := range tc.says {
				if !contains(message, w) {
					t.Errorf("message %q does not mention %q", message, w)
				}
			}
		})
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

func mustQty(s string) resource.Quantity { return resource.MustParse(s) }

func ptrTrue() *bool { b := true; return &b }
