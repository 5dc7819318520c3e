package main

import (
	"strings"
	"testing"
	"time"
)

func TestSpliceKeepsTextOutsideTheMarkers(t *testing.T) {
	beginMarker, endMarker := markers("bench")
	doc := "# Benchmarks\n\nmethod\n\n" + beginMarker + "\nold figures\n" + endMarker + "\n\n## Reliability\n\nhand-written\n"
	got, err := Splice(doc, "bench", "new figures\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nmethod\n\n" + beginMarker + "\nnew figures\n" + endMarker + "\n\n## Reliability\n\nhand-written\n"
	if got != want {
		t.Errorf("Splice:\n%s\nwant:\n%s", got, want)
	}
	// Again: regenerating is stable.
	if again, _ := Splice(got, "bench", "new figures\n"); again != want {
		t.Errorf("second Splice changed the document:\n%s", again)
	}
}

func TestSpliceAppendsMarkersToANewDocument(t *testing.T) {
	beginMarker, endMarker := markers("bench-full")
	got, err := Splice("", "bench-full", "figures\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := beginMarker + "\nfigures\n" + endMarker + "\n"; got != want {
		t.Errorf("Splice of an empty document = %q, want %q", got, want)
	}
}

func TestSpliceRefusesBrokenMarkers(t *testing.T) {
	beginMarker, endMarker := markers("bench")
	if _, err := Splice(endMarker+"\n"+beginMarker+"\n", "bench", "x"); err == nil {
		t.Error("markers out of order accepted")
	}
	if _, err := Splice(beginMarker+"\nno end\n", "bench", "x"); err == nil {
		t.Error("a missing end marker accepted")
	}
}

func TestRenderRatiosAgainstTheSameRun(t *testing.T) {
	run := &Run{Started: time.Unix(0, 0), Ended: time.Unix(60, 0), Scale: "small", Results: []Result{
		{Pkg: pkgBench, Name: "BenchmarkManagerWebhookOverhead", N: 50, Metrics: map[string]float64{"on-p50-ms": 30, "off-p50-ms": 12}, Units: []string{"on-p50-ms", "off-p50-ms"}},
		{Pkg: pkgGPU, Name: "BenchmarkOnlineChurn", N: 3, Metrics: map[string]float64{"gpus/lowerbound": 1.132}, Units: []string{"gpus/lowerbound"}},
	}}
	out := Render(run, Machine{Cores: 2, CPU: "cpu", MemoryGiB: 8, Kernel: "Linux", Go: "go", Commit: "abc"})
	if strings.Contains(out, "### Teams") {
		t.Error("a section none of whose benchmarks ran is shown")
	}
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

func TestSpliceKeepsTheOtherScalesSection(t *testing.T) {
	b, e := markers("bench")
	fb, fe := markers("bench-full")
	doc := b + "\nsmall\n" + e + "\n" + fb + "\nfull\n" + fe + "\n"
	got, err := Splice(doc, sectionName("full"), "new full\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := b + "\nsmall\n" + e + "\n" + fb + "\nnew full\n" + fe + "\n"; got != want {
		t.Errorf("Splice of the full section:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderSaysWhoCompeted(t *testing.T) {
	run := &Run{Started: time.Unix(0, 0), Ended: time.Unix(60, 0), Scale: "small",
		Results: []Result{
			{Pkg: pkgBench, Name: "BenchmarkManagerWebhookOverhead", N: 1, Metrics: map[string]float64{"on-p50-ms": 30, "off-p50-ms": 12}, Units: []string{"on-p50-ms", "off-p50-ms"}},
			{Pkg: pkgMIG, Name: "BenchmarkPackPool", N: 3, Metrics: map[string]float64{"gpus/lowerbound": 1}, Units: []string{"gpus/lowerbound"}},
		},
		Competition: map[string]Competition{
			pkgBench: {Cores: 0.9, Max: 1.8, Took: time.Minute, Every: 5 * time.Second, Samples: 12, Load: LoadStats{Min: 2, Max: 9, Mean: 5, Samples: 12}},
			pkgMIG:   {Cores: 0.05, Max: 0.1, Took: time.Minute, Every: 5 * time.Second, Samples: 12, Load: LoadStats{Min: 1, Max: 1.5, Mean: 1.2, Samples: 12}},
		}}
	out := Render(run, Machine{Cores: 2, CPU: "cpu", MemoryGiB: 8, Kernel: "Linux", Go: "go", Commit: "abc"})
	for _, want := range []string{
		"**Other work competed while these were measured** (`e2e/testsupport/bench`): other processes kept 0.90 cores busy on average",
		"Measured alone (`gpu/mig`): other processes kept 0.05 cores busy",
		"0.47 cores on average, at most 1.80; 1 of 2 packages ran beside other work",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
