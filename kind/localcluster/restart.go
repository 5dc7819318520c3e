package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/gpuvc/gpuvc/kind/supervise"
)

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after grace) and
// starts it again with the same flags over the same etcd, then waits for
// /readyz: what clients see when the API server is upgraded or crashes. Watches
// break and requests fail meanwhile; fault-injection tests use it.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context, grace time.Duration) error {
	i := slices.IndexFunc(cp.procs, func(p *supervise.Process) bool { return p.Name == string(APIServer) })
	if i < 0 {
		return fmt.Errorf("no %s runs in this control plane", APIServer)
	}
	if err := cp.procs[i].Stop(grace); err != nil {
		return err
	}
	p, err := supervise.Start(string(APIServer), cp.Binaries.APIServer, cp.apiArgs, nil, filepath.Join(cp.Dir, "logs"), cp.detached)
	if err != nil {
		return err
	}
	cp.procs[i] = p
	if err := cp.writeState(); err != nil {
		return err
	}
	return cp.waitAPIServer(ctx)
}
