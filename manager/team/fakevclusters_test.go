package team_test

import (
	"context"
	"sync"

	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/vclusters"
)

// fakeVClusters answers as scripted and records what was asked, for unit tests
// where Helm is not the point.
type fakeVClusters struct {
	mu            sync.Mutex
	applied       vclusters.ApplyResult
	applyErr      error
	ready         vclusters.Readiness
	readyErr      error
	kubeconfig    []byte
	kubeconfigErr error
	uninstallErr  error
	calls         []string // "Apply <namespace>/<name>", ...
	lastSpec      vclusters.Spec
}

var _ team.VClusters = (*fakeVClusters)(nil)

// readyVClusters is a release that installs, runs and exports its kubeconfig.
func readyVClusters() *fakeVClusters {
	return &fakeVClusters{
		applied:    vclusters.ApplyResult{Change: vclusters.Installed, Revision: 1},
		ready:      vclusters.Readiness{Ready: true, Reason: "ControlPlaneReady", Message: "1/1 replicas ready"},
		kubeconfig: []byte("apiVersion: v1\nkind: Config\n"),
	}
}

func (f *fakeVClusters) record(op string, spec vclusters.Spec) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op+" "+spec.Namespace+"/"+spec.Name)
	f.lastSpec = spec
}

func (f *fakeVClusters) Apply(_ context.Context, spec vclusters.Spec) (vclusters.ApplyResult, error) {
	f.record("Apply", spec)
	return f.applied, f.applyErr
}

func (f *fakeVClusters) Ready(_ context.Context, spec vclusters.Spec) (vclusters.Readiness, error) {
	f.record("Ready", spec)
	return f.ready, f.readyErr
}

func (f *fakeVClusters) Kubeconfig(_ context.Context, spec vclusters.Spec) ([]byte, error) {
	f.record("Kubeconfig", spec)
	return f.kubeconfig, f.kubeconfigErr
}

func (f *fakeVClusters) Uninstall(_ context.Context, spec vclusters.Spec) error {
	f.record("Uninstall", spec)
	return f.uninstallErr
}

func (f *fakeVClusters) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}
