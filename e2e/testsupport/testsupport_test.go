package testsupport

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// TestProductLinksNoTestSupport: the gpuvc binary links no test-support package
// (e2e/testsupport/..., and the <pkg>test and fake packages beside the code).
func TestProductLinksNoTestSupport(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	const mod = "github.com/gpuvc/gpuvc/"
	out, err := exec.Command(goTool, "list", "-deps", mod+"cmd/gpuvc").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, mod) {
			continue
		}
		name := path.Base(dep)
		if strings.HasPrefix(dep, mod+"e2e/testsupport") || strings.HasSuffix(name, "test") || strings.HasPrefix(name, "fake") {
			t.Errorf("gpuvc links the test-support package %s", dep)
		}
	}
}
