package localcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestNamesWhatIsMissingAndWhatToRun(t *testing.T) {
	t.Setenv("GPUVC_CACHE_DIR", t.TempDir())
	_, err := LoadManifest()
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "make binaries") {
		t.Fatalf("no manifest: got %v, want ErrNotBuilt saying to run make binaries", err)
	}
	bin := filepath.Join(t.TempDir(), "etcd")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Record(map[string]Tool{"etcd": {Path: bin, Version: EtcdVersion}}, nil); err != nil {
		t.Fatal(err)
	}
	// A second record keeps the first one's entries.
	if err := Record(map[string]Tool{"kwok": {Path: "/nonexistent/kwok", Version: KwokVersion}}, map[string]string{FilePause: bin}); err != nil {
		t.Fatal(err)
	}
	m, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Tools["etcd"].Path; got != bin {
		t.Errorf("etcd = %q, want %q", got, bin)
	}
	if p, err := m.File(FilePause); err != nil || p != bin {
		t.Errorf("File(pause) = %q, %v", p, err)
	}
	_, err = m.ControlPlane()
	if !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("ControlPlane() = %v, want ErrNotBuilt", err)
	}
	for _, want := range []string{"kube-apiserver", "kwok (/nonexistent/kwok is gone)", "make binaries"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "etcd") {
		t.Errorf("error %q names etcd, which is there", err)
	}
}
