package main

import (
	"strings"
	"testing"
	"time"
)

func TestSpliceKeepsTextOutsideTheMarkers(t *testing.T) {
	doc := "# Benchmarks\n\nmethod\n\n" + beginMarker + "\nold figures\n" + endMarker + "\n\n## Reliability\n\nhand-written\n"
	got, err := Splice(doc, "new figures\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nmethod\n\n" + beginMarker + "\nnew figures\n" + endMarker + "\n\n## Reliability\n\nhand-written\n"
	if got != want {
		t.Errorf("Splice:\n%s\nwant:\n%s", got, want)
	}
	// Again: regenerating is stable.
	if again, _ := Splice(got, "new figures\n"); again != want {
		t.Errorf("second Splice changed the document:\n%s", again)
	}
}

func TestSpliceAppendsMarkersToANewDocument(t *testing.T) {
	got, err := Splice("", "figures\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := beginMarker + "\nfigures\n" + endMarker + "\n"; got != want {
		t.Errorf("Splice of an empty document = %q, want %q", got, want)
	}
}

func TestSpliceRefusesBrokenMarkers(t *testing.T) {
	if _, err := Splice(endMarker+"\n"+beginMarker+"\n", "x"); err == nil {
		t.Error("markers out of order accepted")
	}
	if _, err := Splice(beginMarker+"\nno end\n", "x"); err == nil {
		t.Error("a missing end marker accepted")
	}
}

func TestRenderRatiosAgainstTheSameRun(t *testing.T) {
	run := &Run{Started: time.Unix(0, 0), Ended: time.Unix(60, 0), Scale: "small", Results: []Result{
		{Pkg: pkgBench, Name: "BenchmarkManagerWebhookOverhead", N: 50, Metrics: map[string]float64{"on-p50-ms": 30, "off-p50-ms": 12}, Units: []string{"on-p50-ms", "off-p50-ms"}},
		{Pkg: pkgGPU, Name: "BenchmarkOnlineChurn", N: 3, Metrics: map[string]float64{"gpus/lowerbound": 1.132}, Units: []string{"gpus/lowerbound"}},
	}}
	out := Render(run, Machine{Cores: 2, CPU: "cpu", MemoryGiB: 8, Kernel: "Linux", Go: "go", Commit: "abc"})
	for _, want := range []string{
		"| pod create latency p50, webhook on | 30.0 ms | same namespace, webhook off, p50: 12.0 | 2.50× |",
		"| churn (20,000 arrivals/departures, 300 live), mean | 1.13 × bound | ceil(Σ) of live requests (the value is the ratio) | 1.13× |",
		"| pod create latency p99, webhook on | — |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
