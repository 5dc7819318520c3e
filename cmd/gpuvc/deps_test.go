package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestHarness pins what the shipped binary may not link: the
// testing package, anything under e2e/ (the test harness and the builder of
// Kubernetes and the other tools from Go modules), and the test-only helpers
// that run the go command (vclusterstest).
func TestBinaryLinksNoTestHarness(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed only %d packages: %q", len(deps), deps)
	}
	for _, p := range deps {
		switch {
		case p == "testing", strings.HasPrefix(p, "testing/"),
			strings.HasPrefix(p, "github.com/gpuvc/gpuvc/e2e/"),
			strings.HasSuffix(p, "test") && strings.HasPrefix(p, "github.com/gpuvc/gpuvc/"):
			t.Errorf("./cmd/gpuvc links %s", p)
		}
	}
}
