package gpuvcbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Build builds ./cmd/gpuvc into dir/gpuvc as the Makefile does (-z lazy: see
// docs/architecture.md) and returns its path.
func Build(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "gpuvc")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-extldflags=-Wl,-z,lazy", "-o", out, "./cmd/gpuvc")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building gpuvc: %v\n%s", err, b)
	}
	return out, nil
}

// repoRoot is the module's root, found from this file's place in it.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// BuildForTest is Build into a folder of t's, failing t on error.
func BuildForTest(t testing.TB, ctx context.Context) string {
	t.Helper()
	bin, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
