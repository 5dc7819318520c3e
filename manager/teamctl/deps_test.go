package teamctl_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoManager pins the CLI library's weight: it talks to the Team API
// (api/...) and must not link what reconciles it — the manager, the
// reconciler, vCluster's Helm seam, the syncer — nor any test support.
func TestLinksNoManager(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/gpuvc/gpuvc/"
	// manager/accounting is allowed for its ledger codec (`team usage` reads the
	// ledgers); it links only the API, gpu/mig and gpu/share, no controller.
	allowed := []string{mod + "api/", mod + "manager/teamctl", mod + "manager/accounting", mod + "gpu/mig", mod + "gpu/share"}
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, mod) {
			if dep == "testing" || strings.HasPrefix(dep, "helm.sh/") {
				t.Errorf("teamctl links %s", dep)
			}
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(dep, a)
		}
		if !ok {
			t.Errorf("teamctl links %s; it may link only %v", dep, allowed)
		}
	}
}
