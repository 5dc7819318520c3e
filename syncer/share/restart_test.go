package share_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// The controller is stopped three times in the middle of churn (pods created
// and deleted as fast as the API server takes them) and a new one started, once
// after a pause with pods arriving and leaving while none runs. Afterwards: no
// GPU holds more than 1.0, every pod is served (the quota leaves room for all),
// no reservation is left without a pod, and deleting the pods removes every
// reservation.
func TestRestartDuringChurn(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 5*time.Minute)
	const quota = 6
	ns := newTeam(ctx, t, "churn", quota)
	t.Cleanup(func() { // the next tests need a controller, even if this one failed mid-restart
		if env.ctrl == nil {
			if c, err := startController(); err == nil {
				env.ctrl = c
			}
		}
	})
	rng := rand.New(rand.NewPCG(1, 2))
	fractions := []string{"0.1", "0.2", "0.25", "0.3", "0.4", "0.5"}

	var live []string
	sum := 0.0 // Σ of live fractions, kept ≤ 3.5 so quota 6 always has room
	frac := map[string]float64{}
	next := 0
	op := func() {
		if len(live) > 0 && (len(live) >= 14 || rng.IntN(3) == 0) {
			i := rng.IntN(len(live))
			deletePod(ctx, t, ns, live[i])
			sum -= frac[live[i]]
			live = slices.Delete(live, i, i+1)
			return
		}
		f := fractions[rng.IntN(len(fractions))]
		v, _ := strconv.ParseFloat(f, 64)
		if sum+v > 3.5 {
			return
		}
		name := fmt.Sprintf("churn-%d", next)
		next++
		createShare(ctx, t, ns, name, f)
		live, frac[name], sum = append(live, name), v, sum+v
	}
	restart := func(pause int) {
		if err := env.ctrl.stop(); err != nil {
			t.Fatal(err)
		}
		env.ctrl = nil
		for range pause {
			op() // no controller is running
		}
		c, err := startController()
		if err != nil {
			t.Fatal(err)
		}
		env.ctrl = c
	}
	for i := range 120 {
		op()
		switch i {
		case 30:
			restart(0)
		case 60:
			restart(25)
		case 95:
			restart(3)
		}
		if i%20 == 19 {
			checkInvariants(ctx, t, ns, share.DefaultMaxPodsPerGPU)
		}
	}

	poll.Until(ctx, t, time.Minute, "every live pod is served", func(ctx context.Context) (bool, error) {
		for _, p := range sharePods(ctx, t, ns) {
			if !served(&p) {
				return false, nil
			}
		}
		return true, nil
	})
	checkInvariants(ctx, t, ns, share.DefaultMaxPodsPerGPU)
	poll.Until(ctx, t, time.Minute, "every reservation has a pod (empty ones collected)", func(ctx context.Context) (bool, error) {
		used := map[string]bool{}
		for _, p := range sharePods(ctx, t, ns) {
			used[p.Labels[contract.LabelShareGroup]] = true
		}
		for _, r := range reservations(ctx, t, ns) {
			if !used[r.Name] {
				return false, nil
			}
		}
		return true, nil
	})
	held, units := len(reservations(ctx, t, ns)), 0
	for _, p := range sharePods(ctx, t, ns) {
		u, _ := strconv.Atoi(p.Annotations[contract.AnnotationShareUnits])
		units += u
	}
	t.Logf("after %d pods created: %d live (Σ %.2f GPU), %d reservations held, lower bound %d",
		next, len(live), float64(units)/gpushare.UnitsPerGPU, held, gpushare.LowerBound(units))
	if got := len(sharePods(ctx, t, ns)); got != len(live) {
		t.Errorf("%d share pods, the test left %d", got, len(live))
	}
}
