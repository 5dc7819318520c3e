package localcp

import (
	"testing"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// Kubectl is the kubectl the builder built with the control plane (read from
// its manifest); t fails if there is none.
func Kubectl(t testing.TB) string {
	t.Helper()
	m, err := localcluster.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.ControlPlane()
	if err != nil {
		t.Fatal(err)
	}
	return b.Kubectl
}
