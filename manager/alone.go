package manager

import (
	"context"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// aloneSince returns when this process became the only manager acting on
// vCluster releases: now without leader election (one replica), the moment it
// is elected with it (the previous leader lost its lease and, with it, its
// process). A Helm operation begun before then was interrupted; see
// vclusters.WithAloneSince.
func aloneSince(ctx context.Context, mgr ctrl.Manager, leaderElection bool) func() time.Time {
	var at atomic.Pointer[time.Time]
	if !leaderElection {
		now := time.Now()
		at.Store(&now)
	} else {
		go func() {
			select {
			case <-mgr.Elected():
				now := time.Now()
				at.Store(&now)
			case <-ctx.Done():
			}
		}()
	}
	return func() time.Time {
		if t := at.Load(); t != nil {
			return *t
		}
		return time.Time{}
	}
}
