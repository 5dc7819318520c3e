package integration

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// The webhook's metrics are on controller-runtime's registry (what the manager
// serves on /metrics), labelled per team.
func TestMetricsOnControllerRuntimeRegistry(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	if _, err := create(ctx, t, "fraud", testobj.Pod("counted", "default").GPUs("99").Obj()); err == nil {
		t.Fatal("99 GPUs admitted")
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"gpuvc_syncer_admission_requests_total":   false,
		"gpuvc_syncer_admission_decisions_total":  false,
		"gpuvc_syncer_admission_duration_seconds": false,
	}
	for _, f := range families {
		if _, ok := want[f.GetName()]; !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "team" && l.GetValue() == "fraud" {
					want[f.GetName()] = true
				}
			}
		}
	}
	for name, found := range want {
		if !found {
			t.Errorf("metric %s has no series for team fraud", name)
		}
	}
	refusals := env.metrics.Decisions.WithLabelValues("fraud", "mutate", "GPUCountAboveLimit")
	if counter(refusals) < 1 {
		t.Error("the refusal was not counted by reason")
	}
}
