package teamqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// TestStatusShowsBorrowedAndLentPerFlavor: two teams of the a100 pool (kwok
// nodes a100-0, whole GPUs, and a100-mig-0, MIG slices), real Kueue. The
// borrower guarantees 1 GPU and no 1g.10gb slice and may borrow 2 of each; the
// lender guarantees 2 GPUs (lending at most 1) and 2 slices. With the lender
// idle, the borrower runs 2 GPU pods (1 borrowed), a 3rd waits (the lender
// lends only 1), and 2 slice pods (both borrowed). Each Team's status says so
// per GPU kind: the borrower borrowed and queued, the lender lent.
func TestStatusShowsBorrowedAndLentPerFlavor(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	createTeam(ctx, t, testobj.Team("lendr", "a100").GPUs(2).MIG("1g.10gb", 2).Lend(1).Obj())
	createTeam(ctx, t, testobj.Team("borrw", "a100").GPUs(1).MIG("1g.10gb", 0).Borrow(2).BorrowMIG("1g.10gb", 2).Obj())
	waitActive(ctx, t, "lendr")
	waitActive(ctx, t, "borrw")
	dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace("borrw"))

	ns := gpuvcv1.HostNamespace("borrw")
	gpuPods(ctx, t, "borrw", "g", 3)
	for i := range 2 {
		p := testobj.Pod(fmt.Sprintf("m-%d", i), ns).MIG("1g.10gb", "1").Obj()
		if _, err := host.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating MIG pod %s: %v", p.Name, err)
		}
	}
	waitPods(ctx, t, "borrw", 4, 1)

	flavors := func(team string) func(ctx context.Context) (map[string]gpuvcv1.QueueFlavorStatus, string, error) {
		return func(ctx context.Context) (map[string]gpuvcv1.QueueFlavorStatus, string, error) {
			tm := &gpuvcv1.Team{}
			if err := c.Get(ctx, types.NamespacedName{Name: team}, tm); err != nil {
				return nil, "", err
			}
			if tm.Status.Queue == nil {
				return nil, "no status.queue", nil
			}
			out := map[string]gpuvcv1.QueueFlavorStatus{}
			for _, f := range tm.Status.Queue.Flavors {
				out[f.Resource] = f
			}
			return out, fmt.Sprintf("%+v", tm.Status.Queue.Flavors), nil
		}
	}
	expect := func(team string, want map[string]gpuvcv1.QueueFlavorStatus) {
		t.Helper()
		read := flavors(team)
		poll.UntilSeen(ctx, t, time.Minute, "team "+team+" status.queue.flavors "+fmt.Sprintf("%+v", want), func(ctx context.Context) (bool, string, error) {
			got, seen, err := read(ctx)
			if err != nil || got == nil {
				return false, seen, err
			}
			for res, w := range want {
				if got[res] != w {
					return false, seen, nil
				}
			}
			return len(got) == len(want), seen, nil
		})
	}
	expect("borrw", map[string]gpuvcv1.QueueFlavorStatus{
		"nvidia.com/gpu": {Flavor: "gpuvc-a100-gpu", Resource: "nvidia.com/gpu", Guaranteed: 1, BorrowingLimit: 2, Used: 2, Borrowed: 1, Queued: 1},
		"nvidia.com/mig-1g.10gb": {Flavor: "gpuvc-a100-mig-1g.10gb", Resource: "nvidia.com/mig-1g.10gb",
			Guaranteed: 0, BorrowingLimit: 2, Used: 2, Borrowed: 2},
	})
	expect("lendr", map[string]gpuvcv1.QueueFlavorStatus{
		"nvidia.com/gpu": {Flavor: "gpuvc-a100-gpu", Resource: "nvidia.com/gpu", Guaranteed: 2, Lent: 1},
		"nvidia.com/mig-1g.10gb": {Flavor: "gpuvc-a100-mig-1g.10gb", Resource: "nvidia.com/mig-1g.10gb",
			Guaranteed: 2, Lent: 2},
	})
}
