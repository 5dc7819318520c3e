package team

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

func TestPrintUsageTable(t *testing.T) {
	u := &teamctl.Usage{Rows: []teamctl.UsageRow{
		{Team: "cv", Pool: "a100", Kind: "fraction", GPUHours: 0.5},
		{Team: "cv", Pool: "a100", Kind: "reserved", GPUHours: 1.5},
		{Team: "fraud", Pool: "a100", Kind: "mig", GPUHours: 3.0 / 7},
		{Team: "fraud", Pool: "a100", Kind: "whole", GPUHours: 12},
		{Team: "fraud", Pool: "a100", Kind: "lost-to-gpu-failure", GPUHours: 1.25},
		{Team: "fraud", Pool: "h100", Kind: "whole", GPUHours: 1},
		{Team: "fraud", TeamUID: "old", Deleted: true, DeletedAt: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), Pool: "a100", Kind: "whole", GPUHours: 2},
	}}
	var b bytes.Buffer
	if err := printUsageTable(&b, u); err != nil {
		t.Fatal(err)
	}
	// LOST is the part of TOTAL the pods drained for a failed GPU held: not added.
	want := `TEAM    POOL   WHOLE   MIG    FRACTION   RESERVED   TOTAL   LOST TO GPU FAILURES   DELETED
cv      a100   0.00    0.00   0.50       1.50       2.00    0.00                   -
fraud   a100   12.00   0.43   0.00       0.00       12.43   1.25                   -
fraud   h100   1.00    0.00   0.00       0.00       1.00    0.00                   -
fraud   a100   2.00    0.00   0.00       0.00       2.00    0.00                   2026-11-01T09:00:00Z
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestGPUTimeLine(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	got := gpuTimeLine(&gpuvcv1.GPUSeconds{Since: since, Total: 9000, ByKind: []gpuvcv1.KindSeconds{
		{Pool: "a100", Kind: "whole", Seconds: 7200}, {Pool: "a100", Kind: "mig", Seconds: 1800}}})
	if want := "2.50 GPU-hours since 2026-11-25T10:00:00Z (whole 2.00, mig 0.50)"; got != want {
		t.Errorf("gpuTimeLine = %q, want %q", got, want)
	}
	if gpuTimeLine(nil) != "" {
		t.Error("no status: no line")
	}
}
