package share

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// On kwok nodes (annotation kwok.x-k8s.io/node) no container runs, so no
// `gpuvc reserve` reports the reservation's GPU: the controller records a
// deterministic UUID itself: GPU-sim-<node>-<n>, n the lowest index no other
// reservation on that node (of any team) holds. Real kubelets serving simulated
// GPUs (gpuvc.dev/simulated=true without the kwok annotation) are left to
// `gpuvc reserve`, which reports the device the kubelet assigned. The names are unique per node, stable across
// restarts (they live on the reservation pods), and cannot be mistaken for a
// real GPU's.

// SimulatedUUID is the UUID recorded for the n-th shared GPU of a simulated node.
func SimulatedUUID(node string, n int) string { return "GPU-sim-" + node + "-" + strconv.Itoa(n) }

// simulateUUIDs records simulated UUIDs on reservations bound to kwok nodes. Choosing and writing are serialised across teams so that two
// reservations on one node never get the same index.
func (c *Controller) simulateUUIDs(ctx context.Context, rs []*reservation) error {
	if len(rs) == 0 {
		return nil
	}
	c.simMu.Lock()
	defer c.simMu.Unlock()
	byNode := map[string][]*reservation{}
	for _, r := range rs {
		byNode[r.node] = append(byNode[r.node], r)
	}
	uuids := map[*reservation]string{}
	for node, list := range byNode {
		var onNode corev1.PodList
		if err := c.opts.APIReader.List(ctx, &onNode,
			client.MatchingLabels{contract.LabelRole: contract.RoleReservation},
			client.MatchingFields{"spec.nodeName": node}); err != nil {
			return fmt.Errorf("listing reservations on node %s: %w", node, err)
		}
		used := map[int]bool{}
		prefix := "GPU-sim-" + node + "-"
		for _, p := range onNode.Items {
			// Terminating reservations still hold their GPU: their index stays taken.
			rest, ok := strings.CutPrefix(p.Annotations[contract.AnnotationGPUUUID], prefix)
			if n, err := strconv.Atoi(rest); ok && err == nil {
				used[n] = true
			}
		}
		n := 0
		for _, r := range list {
			for used[n] {
				n++
			}
			used[n] = true
			uuids[r] = SimulatedUUID(node, n)
		}
	}
	var mu sync.Mutex
	var errs []error
	parallel(bindWorkers, len(rs), func(i int) {
		if err := c.recordUUID(ctx, rs[i], uuids[rs[i]]); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func (c *Controller) recordUUID(ctx context.Context, r *reservation, uuid string) error {
	orig := r.pod
	p := orig.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[contract.AnnotationGPUUUID] = uuid
	patch, err := uidPatch(orig, p)
	if err == nil {
		err = c.opts.Client.Patch(ctx, p, patch)
	}
	if err != nil {
		return fmt.Errorf("recording simulated GPU %s on reservation %s/%s: %w", uuid, p.Namespace, r.name, err)
	}
	r.pod, r.uuid = p, uuid
	return nil
}
