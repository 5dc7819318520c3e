package gpucheck

import (
	"os"
	"testing"
)

// The XML of a real H200 (driver 580.159.04), as nvidia-smi -q -x printed it.
func TestParseRealXML(t *testing.T) {
	b, err := os.ReadFile("testdata/h200-smi.xml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseXML(b)
	if err != nil {
		t.Fatal(err)
	}
	if l.DriverVersion != "580.159.04" || l.CUDAVersion != "13.0" || l.AttachedGPUs != 1 || len(l.GPUs) != 1 {
		t.Fatalf("log = %+v", l)
	}
	g := l.GPUs[0]
	total, err := mib(g.FB.Total)
	if err != nil || total != 143771 {
		t.Errorf("memory total = %d, %v", total, err)
	}
	if g.Product != "NVIDIA H200" || g.UUID != "GPU-70dd6be1-a751-2169-218b-2cdb3edb9e59" || g.PCI.BusID != "00000000:00:06.0" ||
		g.MIGMode.Current != "Disabled" || g.Architecture != "Hopper" {
		t.Errorf("gpu = %+v", g)
	}
}

func TestParseQuery(t *testing.T) {
	rows, err := parseQuery([]byte("0, GPU-a, 100, 4083\n1, GPU-b, 0, 0\n"), []string{"index", "uuid", "utilization.gpu", "memory.used"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0]["utilization.gpu"] != "100" || rows[1]["uuid"] != "GPU-b" {
		t.Errorf("rows = %v", rows)
	}
	if _, err := parseQuery([]byte("0, GPU-a\n"), []string{"index", "uuid", "memory.used"}); err == nil {
		t.Error("a short line must be an error")
	}
}
