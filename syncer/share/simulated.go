package share

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/syncer"
)

// On nodes labelled gpuvc.dev/simulated=true no container runs, so `gpuvc
// reserve` never reports a GPU. The controller records a deterministic UUID
// instead: GPU-sim-<node>-<n>, n the lowest index no other reservation on that
// node (of any team) holds. The names are unique per node, stable across
// restarts (they live on the reservation pods), and cannot be mistaken for a
// real GPU's.

// SimulatedUUID is the UUID recorded for the n-th shared GPU of a simulated node.
func SimulatedUUID(node string, n int) string { return "GPU-sim-" + node + "-" + strconv.Itoa(n) }

// simulateUUID records a simulated UUID on r, which is bound to a simulated node.
// Choosing and writing are serialised so that two teams' reservations on one
// node never get the same index.
func (c *Controller) simulateUUID(ctx context.Context, r *reservation) error {
	c.simMu.Lock()
	defer c.simMu.Unlock()
	var onNode corev1.PodList
	if err := c.opts.APIReader.List(ctx, &onNode,
		client.MatchingLabels{syncer.LabelRole: syncer.RoleReservation},
		client.MatchingFields{"spec.nodeName": r.node}); err != nil {
		return fmt.Errorf("listing reservations on node %s: %w", r.node, err)
	}
	used := map[int]bool{}
	prefix := "GPU-sim-" + r.node + "-"
	for _, p := range onNode.Items {
		// Terminating reservations still hold their GPU: their index stays taken.
		rest, ok := strings.CutPrefix(p.Annotations[syncer.AnnotationGPUUUID], prefix)
		if n, err := strconv.Atoi(rest); ok && err == nil && p.UID != r.pod.UID {
			used[n] = true
		}
	}
	n := 0
	for used[n] {
		n++
	}
	uuid := SimulatedUUID(r.node, n)
	orig := r.pod.DeepCopy()
	if r.pod.Annotations == nil {
		r.pod.Annotations = map[string]string{}
	}
	r.pod.Annotations[syncer.AnnotationGPUUUID] = uuid
	if err := c.opts.Client.Patch(ctx, r.pod, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		r.pod = orig
		return fmt.Errorf("recording simulated GPU %s on reservation %s/%s: %w", uuid, r.pod.Namespace, r.name, err)
	}
	r.uuid = uuid
	return nil
}
