package gpucheck

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/gpu/nvmltest"
)

// rows returns a step's rows whose field contains part.
func rows(r Report, step, part string) []Row {
	var out []Row
	for _, s := range r.Steps {
		if s.Name != step {
			continue
		}
		for _, row := range s.Rows {
			if strings.Contains(row.Field, part) {
				out = append(out, row)
			}
		}
	}
	return out
}

func differing(r Report) []Row {
	var out []Row
	for _, s := range r.Steps {
		for _, row := range s.Rows {
			if row.Status == Differs {
				out = append(out, row)
			}
		}
	}
	return out
}

// The real H200, replayed: gpuvc reads it as nvidia-smi, GFD and NVML's
// profile table do, in every step.
func TestReplayedH200Passes(t *testing.T) {
	h := &h200{}
	r := Run(context.Background(), h.config())
	if r.Failures() != 0 {
		t.Fatalf("failures: %v\n%s", differing(r), r.Markdown())
	}
	if len(r.Steps) != 7 {
		t.Fatalf("%d steps, want 7", len(r.Steps))
	}
	if testing.Verbose() {
		t.Log("\n" + r.Markdown())
	}
	for _, want := range []struct{ step, field, gpuvc string }{
		{"Inventory", "memory (MiB)", "143771"},
		{"Inventory", "PCI bus", "00000000:00:06.0"},
		{"Inventory", "compute capability", "9.0"},
		{"Inventory", "CUDA version", "13.0"},
		{"Node labels", "nvidia.com/gpu.family", "hopper"},
		{"Node labels", "nvidia.com/cuda.driver.rev", "04"},
		{"MIG catalog", "1g.18gb: memory (MiB)", "16384"},
		{"MIG catalog", "7g.141gb: placements start:size", "0:8"},
		{"MIG catalog", "1g.35gb: placements start:size", "0:2 2:2 4:2 6:2"},
		{"Utilization and memory", "loaded #2: utilization (%)", "100.0"},
		{"Utilization and memory", "idle #1: memory used (MiB)", "0.0"},
		{"Utilization and memory", "loaded #1: memory used (MiB)", "4074.0"},
	} {
		got := rows(r, want.step, want.field)
		if len(got) == 0 || got[0].Gpuvc != want.gpuvc || got[0].Status != OK {
			t.Errorf("%s / %s: rows %+v, want gpuvc %q and ok", want.step, want.field, got, want.gpuvc)
		}
	}
	if got := rows(r, "MIG catalog", ": name"); len(got) != 7 {
		t.Errorf("%d profile names compared, want the 7 of the H200", len(got))
	}
	quarter := rows(r, "Fraction limits", "gpu-fraction 0.25")
	if len(quarter) != 1 || quarter[0].Gpuvc != "CUDA_DEVICE_MEMORY_LIMIT_0=34918m CUDA_DEVICE_SM_LIMIT=25" {
		t.Errorf("0.25 share: %+v", quarter)
	}
	over := rows(r, "Fraction limits", "allocates")
	if len(over) != 1 || over[0].Gpuvc != "35942 MiB" || !strings.Contains(over[0].Note, "not enforced") {
		t.Errorf("over-limit allocation: %+v", over)
	}
	if half := rows(r, "Fraction limits", "2 pods of 0.5"); len(half) != 1 || half[0].Gpuvc != "141722" || half[0].Status != OK {
		t.Errorf("two 0.5 pods: %+v", half)
	}
	if w := rows(r, "XID and ECC events", "watch"); len(w) != 1 || w[0].Status != OK {
		t.Errorf("event watch: %+v", w)
	}
}

// The agent's memory reading before this check existed (NVML's v1 call,
// which counts the driver's reserve as used) is a difference the check finds:
// 615 MiB on an idle H200.
func TestCheckFindsTheReserveCountedAsUsed(t *testing.T) {
	h := &h200{noV2Memory: true}
	r := Run(context.Background(), h.config())
	idle := rows(r, "Utilization and memory", "idle #1: memory used")
	if len(idle) != 1 || idle[0].Status != Differs || idle[0].Gpuvc != "615.1" || idle[0].Reference != "0" {
		t.Errorf("idle memory row: %+v", idle)
	}
}

// The catalog's old H200 estimate (16512 MiB for 1g.18gb) against the
// driver's 16384: a difference.
func TestCheckFindsACatalogDifference(t *testing.T) {
	h := &h200{profileMiB: map[int]uint64{0: 16512}}
	r := Run(context.Background(), h.config())
	got := rows(r, "MIG catalog", "1g.18gb: memory")
	if len(got) != 1 || got[0].Status != Differs || got[0].Gpuvc != "16384" || got[0].Reference != "16512" {
		t.Errorf("row: %+v", got)
	}
	if r.Failures() != 1 {
		t.Errorf("failures = %d, want 1: %v", r.Failures(), differing(r))
	}
}

func TestCheckFindsAnInventoryDifference(t *testing.T) {
	xml, err := os.ReadFile("testdata/h200-smi.xml")
	if err != nil {
		t.Fatal(err)
	}
	h := &h200{xml: bytes.Replace(xml, []byte("<pci_bus_id>00000000:00:06.0"), []byte("<pci_bus_id>00000000:00:07.0"), 1)}
	r := Run(context.Background(), h.config())
	got := rows(r, "Inventory", "PCI bus")
	if len(got) != 1 || got[0].Status != Differs {
		t.Errorf("row: %+v", got)
	}
}

func TestCheckFindsAnUnseenLoad(t *testing.T) {
	h := &h200{loadUnseen: true}
	r := Run(context.Background(), h.config())
	got := rows(r, "Utilization and memory", "highest utilization")
	if len(got) != 1 || got[0].Status != Differs || !strings.Contains(got[0].Note, "did not see the load") {
		t.Errorf("row: %+v", got)
	}
}

// Without workloads (no python, --no-load) the loaded phase and the
// allocation are said not read; the check still passes on what it read.
func TestCheckWithoutWorkloads(t *testing.T) {
	h := &h200{}
	c := h.config()
	c.Workloads = nil
	r := Run(context.Background(), c)
	if r.Failures() != 0 {
		t.Fatalf("failures: %v", differing(r))
	}
	for _, f := range []string{"load", "over-limit allocation"} {
		if got := rows(r, "", f); len(got) > 0 {
			continue
		}
		found := false
		for _, s := range r.Steps {
			for _, row := range s.Rows {
				found = found || (row.Field == f && row.Status == NotRead)
			}
		}
		if !found {
			t.Errorf("no not-read row %q", f)
		}
	}
}

// No driver: one failed step that says so, nothing after it.
func TestCheckWithoutADriver(t *testing.T) {
	r := Run(context.Background(), Config{Lib: nvmltest.NoDriver(), SMI: fakeSMI{&h200{}}})
	if len(r.Steps) != 1 || !strings.Contains(r.Steps[0].Err, "NVIDIA driver not found") || r.Failures() != 1 {
		t.Errorf("report: %+v", r)
	}
	if !strings.Contains(r.Summary(), "FAIL") {
		t.Errorf("summary %q", r.Summary())
	}
}

func TestDefaultReserveIsTheTeamDefault(t *testing.T) {
	if DefaultReserveMiB != v1alpha1.DefaultFractionReserveMiB {
		t.Errorf("DefaultReserveMiB = %d, the Team's default is %d", DefaultReserveMiB, v1alpha1.DefaultFractionReserveMiB)
	}
}

// The reserve gpuvc used before the real H200 was measured (256 MiB): two
// 0.5 pods' limits add up to more than the GPU can allocate.
func TestCheckFindsLimitsAboveWhatTheGPUAllocates(t *testing.T) {
	h := &h200{}
	c := h.config()
	c.ReserveMiB = 256
	r := Run(context.Background(), c)
	got := rows(r, "Fraction limits", "2 pods of 0.5")
	if len(got) != 1 || got[0].Status != Differs || got[0].Gpuvc != "143258" || !strings.Contains(got[0].Reference, "143155") {
		t.Errorf("row: %+v", got)
	}
}

// The runtime step judges the machine's toolkit configuration the agent's way:
// none at all (the lent H200 had none) is unsafe; the hardened file is safe.
func TestRuntimeStep(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"", "ToolkitConfigMissing"},
		{"accept-nvidia-visible-devices-envvar-when-unprivileged = false\n", "EnvvarIgnoredWhenUnprivileged"},
	} {
		root := t.TempDir()
		if tc.file != "" {
			dir := filepath.Join(root, "etc", "nvidia-container-runtime")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		h := &h200{}
		c := h.config()
		c.Root = root
		r := Run(context.Background(), c)
		got := rows(r, "Container runtime", "verdict")
		if len(got) != 1 || !strings.Contains(got[0].Field, tc.want) {
			t.Errorf("file %q: verdict rows %+v, want reason %s", tc.file, got, tc.want)
		}
	}
}
