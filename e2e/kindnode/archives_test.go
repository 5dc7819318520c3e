package kindnode

import (
	"os"
	"path/filepath"
	"testing"
)

// A pinned archive outlives the cache's removal of the original.
func TestPinnedArchivesOutliveTheCachedOnes(t *testing.T) {
	cache, run := t.TempDir(), t.TempDir()
	orig := filepath.Join(cache, "ghcr.io_gpuvc_gpuvc_dev-0123456789abcdef.tar")
	if err := os.WriteFile(orig, []byte("archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	pinned, err := PinArchives(run, []string{orig})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(orig); err != nil {
		t.Fatal(err)
	}
	if len(pinned) != 1 || filepath.Dir(pinned[0]) != run {
		t.Fatalf("pinned %v, want one archive in %s", pinned, run)
	}
	if b, err := os.ReadFile(pinned[0]); err != nil || string(b) != "archive" {
		t.Fatalf("pinned archive after the cache removed the original: %q, %v", b, err)
	}
}
