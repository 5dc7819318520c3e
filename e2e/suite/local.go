package suite

import (
	"context"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// localBackend is the local control plane with the gpuvc binary as the manager.
type localBackend struct {
	cp      *localcluster.ControlPlane
	manager *gpuvcbin.Manager
	dir     string
}

func startLocal(ctx context.Context, gpuvcBin string) (Backend, error) {
	cp, err := localcp.Start(ctx, localcluster.Options{Log: os.Stderr})
	if err != nil {
		return nil, err
	}
	b := &localBackend{cp: cp}
	if err := b.startManager(ctx, gpuvcBin); err != nil {
		_ = b.Stop()
		return nil, err
	}
	return b, nil
}

// startManager runs `gpuvc manager` as its own process, the way a developer runs
// it against any cluster (gpuvcbin.StartManager).
func (b *localBackend) startManager(ctx context.Context, bin string) error {
	var err error
	if b.dir, err = os.MkdirTemp("", "gpuvc-e2e-manager-"); err != nil {
		return err
	}
	b.manager, err = gpuvcbin.StartManager(ctx, bin, b.cp.Kubeconfig, b.dir)
	return err
}

func (b *localBackend) Name() string                 { return "local control plane (kwok GPU nodes)" }
func (b *localBackend) Kubeconfig() string           { return b.cp.Kubeconfig }
func (b *localBackend) Config() *rest.Config         { return b.cp.Config }
func (b *localBackend) Client() kubernetes.Interface { return b.cp.Client }
func (b *localBackend) RunsContainers() bool         { return false }

func (b *localBackend) ExportKubeconfig(ctx context.Context, team string) error {
	return managertest.ExportKubeconfig(ctx, b.cp.Client, team)
}

// ManagerPID is the manager process, for the no-leftovers check.
func (b *localBackend) ManagerPID() int { return b.manager.PID() }

func (b *localBackend) Stop() error {
	if b.manager != nil {
		b.manager.Stop()
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
	return b.cp.Stop()
}
