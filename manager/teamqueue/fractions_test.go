package teamqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// TestFractionalPodsQueueAsWholeGPUs: fractional pods of a queueing team, with
// the real share controller (in the manager) and the real Kueue. The share
// controller's reservation pod is what asks for the whole GPU: gpuvc's webhook
// sends it to the team's queue, so Kueue counts one whole GPU however many
// shares it carries. Two half-GPU pods share one admitted reservation and run;
// a 0.75 pod needs a second GPU, which the team may borrow but nobody in the
// h100 pool lends: its reservation waits in Kueue, counted as 1 queued GPU,
// and the share pod waits behind it.
func TestFractionalPodsQueueAsWholeGPUs(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	waitCohortEmpty(ctx, t, "h100")
	createTeam(ctx, t, testobj.Team("fracq", "h100").GPUs(1).Borrow(1).Fractions().Obj())
	waitActive(ctx, t, "fracq")
	ns := gpuvcv1.HostNamespace("fracq")
	dumpWorkloadsOnFailure(t, ns)

	share := func(name, fraction string) {
		t.Helper()
		p := testobj.Pod(name, ns).GPUFraction(fraction).Obj()
		created, err := host.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating share pod %s: %v", name, err)
		}
		if _, queued := created.Labels[contract.LabelKueueQueueName]; queued {
			t.Fatalf("share pod %s names a Kueue queue itself; its reservation should: %s", name, poll.DescribePod(created))
		}
	}
	share("half-0", "0.5")
	share("half-1", "0.5")
	poll.UntilSeen(ctx, t, 2*time.Minute, "one admitted reservation in the team's queue, both halves running", func(ctx context.Context) (bool, string, error) {
		res, shares, seen, err := sharePods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		ok := len(res) == 1 && res[0].Labels[contract.LabelKueueQueueName] == contract.KueueLocalQueueName && !gated(res[0]) &&
			res[0].Status.Phase == corev1.PodRunning && len(shares) == 2
		for _, p := range shares {
			ok = ok && p.Status.Phase == corev1.PodRunning
		}
		return ok, seen, nil
	})
	expectGPUStanding(ctx, t, "fracq", 1, 0)

	// A second GPU: its reservation is queued in Kueue, not refused, and the
	// share pod waits for it.
	share("big", "0.75")
	poll.UntilSeen(ctx, t, 2*time.Minute, "a second reservation waiting in Kueue, the 0.75 pod behind it", func(ctx context.Context) (bool, string, error) {
		res, shares, seen, err := sharePods(ctx, ns)
		if err != nil {
			return false, "", err
		}
		waiting := 0
		for _, r := range res {
			if gated(r) && r.Labels[contract.LabelKueueQueueName] == contract.KueueLocalQueueName {
				waiting++
			}
		}
		bigWaits := false
		for _, p := range shares {
			bigWaits = bigWaits || (p.Name == "big" && p.Status.Phase == corev1.PodPending && p.Spec.NodeName == "")
		}
		return len(res) == 2 && waiting == 1 && bigWaits, seen, nil
	})
	expectGPUStanding(ctx, t, "fracq", 1, 1)
}

// sharePods returns a namespace's reservation pods and share pods (not on
// their way out) and a one-line summary of them.
func sharePods(ctx context.Context, ns string) (res, shares []*corev1.Pod, seen string, err error) {
	list, err := host.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, "", err
	}
	var s []string
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		switch {
		case p.Labels[contract.LabelRole] == contract.RoleReservation:
			res = append(res, p)
		case p.Annotations[contract.AnnotationGPUFraction] != "":
			shares = append(shares, p)
		default:
			continue
		}
		s = append(s, fmt.Sprintf("%s:%s gated=%v queue=%q", p.Name, p.Status.Phase, len(p.Spec.SchedulingGates) > 0, p.Labels[contract.LabelKueueQueueName]))
	}
	return res, shares, strings.Join(s, " "), nil
}

// expectGPUStanding waits until the team's whole-GPU standing in status.queue
// is used and queued.
func expectGPUStanding(ctx context.Context, t *testing.T, team string, used, queued int64) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, fmt.Sprintf("team %s: %d whole GPU used, %d queued", team, used, queued), func(ctx context.Context) (bool, string, error) {
		tm := &gpuvcv1.Team{}
		if err := c.Get(ctx, types.NamespacedName{Name: team}, tm); err != nil {
			return false, "", err
		}
		if tm.Status.Queue == nil || len(tm.Status.Queue.Flavors) == 0 {
			return false, "no status.queue.flavors", nil
		}
		f := tm.Status.Queue.Flavors[0]
		return f.Resource == contract.ResourceGPU && f.Used == used && f.Queued == queued, fmt.Sprintf("%+v", f), nil
	})
}

// waitCohortEmpty waits until no ClusterQueue of an earlier test's team is left
// in the pool's cohort: it could lend.
func waitCohortEmpty(ctx context.Context, t *testing.T, pool string) {
	t.Helper()
	poll.UntilSeen(ctx, t, 2*time.Minute, "no ClusterQueue left in cohort "+teamqueue.CohortName(pool), func(ctx context.Context) (bool, string, error) {
		l, err := dc.Resource(teamqueue.GroupVersion.WithResource("clusterqueues")).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var left []string
		for _, cq := range l.Items {
			if cq.Object["spec"].(map[string]any)["cohortName"] == teamqueue.CohortName(pool) {
				left = append(left, cq.GetName())
			}
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
}
