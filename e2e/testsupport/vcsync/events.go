package vcsync

import (
	"testing"

	"github.com/loft-sh/vcluster/pkg/controllers/resources/events"
	"github.com/loft-sh/vcluster/pkg/syncer/synccontext"
	syncertypes "github.com/loft-sh/vcluster/pkg/syncer/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventToVirtual runs vCluster's event syncer (pkg/controllers/resources/events)
// on a host event about a host pod vCluster synced, and returns the event it
// creates in the virtual cluster: what the team sees on its pod. Nil when
// vCluster drops the event (e.g. virtual is nil: the virtual pod is gone).
// hostPod must carry vCluster's annotations naming its virtual pod (as the pods
// Translate returns and the API server stores do); virtual is the virtual pod
// as the virtual API server stores it.
func EventToVirtual(t *testing.T, vc VCluster, hostEvent *corev1.Event, hostPod, virtual *corev1.Pod) *corev1.Event {
	t.Helper()
	hostObjs := []client.Object{hostPod.DeepCopy(), hostEvent.DeepCopy()}
	var virtualObjs []client.Object
	keys := podKeys{host: client.ObjectKeyFromObject(hostPod)}
	if virtual != nil {
		v := normalize(virtual)
		virtualObjs = append(virtualObjs, v)
		keys.virtual = client.ObjectKeyFromObject(v)
	}
	res := vc.runSyncer(t, events.New, keys, hostObjs, virtualObjs, func(ctx *synccontext.SyncContext, s syncertypes.Sync[client.Object], _ clients) (result, error) {
		r, err := s.SyncToVirtual(ctx, synccontext.NewSyncToVirtualEvent[client.Object](hostEvent.DeepCopy()))
		return result{requeue: r.Requeue || r.RequeueAfter > 0}, err //nolint:staticcheck // Requeue is what vCluster sets
	})
	if res.Err != nil {
		t.Fatalf("vCluster's event syncer failed on %s/%s: %v", hostEvent.Namespace, hostEvent.Name, res.Err)
	}
	for _, w := range res.Virtual {
		if e, ok := w.Object.(*corev1.Event); ok && w.Verb == "create" {
			return e.DeepCopy()
		}
	}
	return nil
}
