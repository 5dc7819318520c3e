package accounting

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// bound puts a pod on a node, running.
func bound(p *testobj.PodWrapper, node string) *testobj.PodWrapper {
	return p.NodeName(node).Edit(func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning })
}

func reservation(name, node string) *testobj.PodWrapper {
	return bound(testobj.Pod(name, "team-a").GPUs("1").Label(contract.LabelRole, contract.RoleReservation), node)
}

func sharePod(name, group, units, node string) *testobj.PodWrapper {
	return bound(testobj.Pod(name, "team-a").Label(contract.LabelShareGroup, group).Annotation(contract.AnnotationShareUnits, units), node)
}

func TestTeamRates(t *testing.T) {
	nodes := map[string]NodeInfo{
		"a100-0":     {Pool: "a100", Product: "NVIDIA-A100-SXM4-80GB"},
		"a30-0":      {Pool: "a30", Product: "NVIDIA-A30"},
		"unlabelled": {},
	}
	for name, tc := range map[string]struct {
		pods []*testobj.PodWrapper
		want Rates
	}{
		"whole GPUs": {
			pods: []*testobj.PodWrapper{bound(testobj.Pod("p", "team-a").GPUs("2"), "a100-0")},
			want: Rates{{"a100", KindWhole}: 2},
		},
		"MIG slices weigh compute slices over the model's": {
			pods: []*testobj.PodWrapper{
				bound(testobj.Pod("a", "team-a").MIG("3g.40gb", "2"), "a100-0"), // 2 x 3/7
				bound(testobj.Pod("b", "team-a").MIG("1g.6gb", "1"), "a30-0"),   // 1/4 on an A30
			},
			want: Rates{{"a100", KindMIG}: 6.0 / 7, {"a30", KindMIG}: 0.25},
		},
		"unknown model: sevenths; no pool label: the team's pool": {
			pods: []*testobj.PodWrapper{bound(testobj.Pod("a", "team-a").MIG("1g.10gb", "1"), "unlabelled")},
			want: Rates{{"h100", KindMIG}: 1.0 / 7},
		},
		"a reservation splits into bound shares and the rest": {
			pods: []*testobj.PodWrapper{
				reservation("gpuvc-gpu-1", "a100-0"),
				sharePod("s1", "gpuvc-gpu-1", "3000", "a100-0"),
				sharePod("s2", "gpuvc-gpu-1", "2500", "a100-0"),
				reservation("gpuvc-gpu-2", "a100-0"), // empty: all reserved
			},
			want: Rates{{"a100", KindFraction}: 0.55, {"a100", KindReserved}: 1.45},
		},
		"pods that do not hold GPUs": {
			pods: []*testobj.PodWrapper{
				testobj.Pod("pending", "team-a").GPUs("1"),
				bound(testobj.Pod("done", "team-a").GPUs("1"), "a100-0").Edit(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				bound(testobj.Pod("failed", "team-a").GPUs("1"), "a100-0").Edit(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				bound(testobj.Pod("cpu", "team-a").Limit("cpu", "1"), "a100-0"),
				testobj.Pod("gated", "team-a").Annotation(contract.AnnotationShareUnits, "5000"),
			},
			want: Rates{},
		},
		"an init container asking more than the others counts": {
			pods: []*testobj.PodWrapper{bound(testobj.Pod("p", "team-a").GPUs("1").InitContainer("warm").LimitOn("warm", "nvidia.com/gpu", "3"), "a100-0")},
			want: Rates{{"a100", KindWhole}: 3},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var pods []corev1.Pod
			for _, p := range tc.pods {
				pods = append(pods, *p.Obj())
			}
			if d := cmp.Diff(tc.want, TeamRates(pods, nodes, "h100"), approx); d != "" {
				t.Errorf("rates (-want +got):\n%s", d)
			}
		})
	}
}
