package teamqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// TestWaitingPodIsToldWhy: a team alone in its pool's cohort (pool "wait", no
// nodes: Kueue admits by quota, not by nodes) holds its 1 guaranteed GPU; its
// second GPU pod could only borrow, and nobody lends, so it waits, and its host
// pod (which vCluster mirrors to the team) gets a Warning event Queued naming
// the team's standing and Kueue's reason.
func TestWaitingPodIsToldWhy(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("waiter", "wait").GPUs(1).Borrow(1).Obj())
	waitActive(ctx, t, "waiter")
	// One Workload per second: Kueue breaks a tie of creation seconds by UID,
	// and w-1 must be the one that waits.
	queuePod(ctx, t, "waiter", "w-0", "")
	queuePod(ctx, t, "waiter", "w-1", "")
	ns := gpuvcv1.HostNamespace("waiter")
	dumpWorkloadsOnFailure(t, ns)

	want := []string{"queued: team waiter uses 1 of 1 guaranteed GPUs and borrows 0 (limit 1) in cohort gpuvc-wait", "Kueue: ", "insufficient"}
	poll.UntilSeen(ctx, t, time.Minute, "a Queued event on the waiting pod w-1", func(ctx context.Context) (bool, string, error) {
		evs, err := host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Regarding.Name != "w-1" || e.Reason != "Queued" {
				continue
			}
			seen = append(seen, e.Note)
			ok := e.Type == "Warning"
			for _, w := range want {
				ok = ok && strings.Contains(e.Note, w)
			}
			if ok {
				return true, e.Note, nil
			}
		}
		return false, strings.Join(seen, " | "), nil
	})
}
