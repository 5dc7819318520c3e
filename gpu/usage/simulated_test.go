package usage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

func simulatedInventory(t *testing.T) inventory.Inventory {
	t.Helper()
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 3, MIG: []string{"all-disabled", "all-disabled", "all-balanced"}, Seed: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// The file drives the simulated GPUs' utilization as NVML would report it: by
// index or UUID, a later line wins, GPUs not named report none, MIG devices
// carry memory only; rewriting the file changes the next read.
func TestSimulatedUtilization(t *testing.T) {
	inv := simulatedInventory(t)
	path := filepath.Join(t.TempDir(), "gpu-utilization")
	s := Simulated{Inventory: inv, Path: path}

	got, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range got {
		if smp.UtilizationPercent != nil {
			t.Fatalf("no file: %s reports %v%%, want no utilization (never idle)", smp.UUID, *smp.UtilizationPercent)
		}
	}

	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# test\n0 10\n" + inv.GPUs[1].UUID + " 80%\n0 0\n")
	got, err = s.Read()
	if err != nil {
		t.Fatal(err)
	}
	byUUID := map[string]Sample{}
	migs := 0
	for _, smp := range got {
		byUUID[smp.UUID] = smp
		if smp.MIG {
			migs++
			if smp.GPU != 2 || smp.UtilizationPercent != nil || smp.MemoryTotalBytes == 0 {
				t.Errorf("MIG device %s: %+v, want GPU 2, memory only", smp.UUID, smp)
			}
		}
	}
	if migs == 0 {
		t.Error("no MIG devices read from GPU 2 (all-balanced)")
	}
	for gpu, want := range map[int]float64{0: 0, 1: 80} {
		smp := byUUID[inv.GPUs[gpu].UUID]
		if smp.UtilizationPercent == nil || *smp.UtilizationPercent != want {
			t.Errorf("GPU %d: utilization %v, want %v", gpu, smp.UtilizationPercent, want)
		}
		if smp.MemoryTotalBytes != uint64(inv.GPUs[gpu].MemoryMiB)<<20 || smp.MemoryUsedBytes != 0 {
			t.Errorf("GPU %d: memory %d of %d, want 0 of %d MiB", gpu, smp.MemoryUsedBytes, smp.MemoryTotalBytes, inv.GPUs[gpu].MemoryMiB)
		}
	}

	write("1 5\n")
	got, err = s.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, smp := range got {
		if smp.UUID == inv.GPUs[0].UUID && smp.UtilizationPercent != nil {
			t.Errorf("GPU 0 no longer named: %v%%, want none", *smp.UtilizationPercent)
		}
		if smp.UUID == inv.GPUs[1].UUID && (smp.UtilizationPercent == nil || *smp.UtilizationPercent != 5) {
			t.Errorf("GPU 1 rewritten to 5: %v", smp.UtilizationPercent)
		}
	}
}

func TestSimulatedUtilizationRejectsGarbage(t *testing.T) {
	inv := simulatedInventory(t)
	for text, want := range map[string]string{
		"0\n":         "want \"<gpu index or UUID> <percent 0-100>\"",
		"7 10\n":      `GPU "7" is neither an index nor a UUID of the node's 3 simulated GPUs`,
		"0 101\n":     `utilization "101" is not a percent from 0 to 100`,
		"0 busy\n":    `utilization "busy" is not a percent`,
		"0 1 2 3\n":   "line 1",
		"# ok\n1 x\n": "line 2",
	} {
		path := filepath.Join(t.TempDir(), "u")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Simulated{Inventory: inv, Path: path}.Read()
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: error %v, want one naming the file and %q", text, err, want)
		}
	}
}
