package manager

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuvc/gpuvc/manager/virtualnodes"
)

// VirtualNodesInterval is how often the leader writes the teams' GPU quota
// into the nodes vCluster shows them: a node appears in a team's cluster when
// its first pod lands there, and shows the team's GPUs within this.
const VirtualNodesInterval = 15 * time.Second

// addVirtualNodes shows each team its GPUs on the nodes of its virtual cluster
// (manager/virtualnodes), on the leader. Not with --sync-real-nodes: vCluster
// then copies the pool's real nodes, status included, over anything written.
func addVirtualNodes(mgr ctrl.Manager, opts Options) error {
	if opts.Team.SyncRealNodes {
		return nil
	}
	s := &virtualnodes.Syncer{Reader: mgr.GetAPIReader(), Cache: mgr.GetClient(), Dial: opts.Idle.Dial}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		s.Run(ctx, VirtualNodesInterval)
		return nil
	}))
}
