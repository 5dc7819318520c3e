// Command gpu-check proves on a machine with NVIDIA GPUs that gpuvc reads them
// right (package gpu/gpucheck): it needs the NVIDIA driver and nvidia-smi, and
// python3 with PyTorch for the load and allocation steps. It prints the report
// and writes it to --report; it exits 1 when anything differs.
//
//	make gpu-check            # build and run here
//	bin/gpu-check --report r.md
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/gpu/gpucheck"
)

func main() {
	report := flag.String("report", "gpu-check-report.md", "file the Markdown report is written to")
	jsonOut := flag.String("json", "", "file the report is also written to as JSON (none when empty)")
	smi := flag.String("nvidia-smi", "nvidia-smi", "the nvidia-smi binary")
	python := flag.String("python", "python3", "python with PyTorch for the load and the allocation; --no-load skips both")
	noLoad := flag.Bool("no-load", false, "run no GPU program: the loaded and allocation readings are reported as not read")
	samples := flag.Int("samples", 5, "readings per usage phase (idle, loaded), one a second")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	host, _ := os.Hostname()
	c := gpucheck.Config{
		Lib: nvml.New(), SMI: gpucheck.ExecSMI{Path: *smi}, Machine: host, Samples: *samples,
		Progress: func(step string) { fmt.Fprintf(os.Stderr, "gpu-check: %s ...\n", step) },
	}
	if !*noLoad {
		c.Workloads = gpucheck.PyTorch{Python: *python, Lifetime: 2 * time.Minute}
	}
	r := gpucheck.Run(ctx, c)
	md := r.Markdown()
	fmt.Print(md)
	if err := os.WriteFile(*report, []byte(md), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-check: writing the report:", err)
		os.Exit(2)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "gpu-check: writing the JSON report:", err)
			os.Exit(2)
		}
	}
	fmt.Fprintf(os.Stderr, "gpu-check: report written to %s\n", *report)
	if r.Failures() > 0 {
		os.Exit(1)
	}
}
