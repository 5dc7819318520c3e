package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer/share"
)

const (
	quotaGPUs  = 3   // per churn team; 5 teams fit the 16 GPUs
	maxLiveSum = 1.5 // Σ of a team's live fractions: first fit needs ≤ 3 GPUs
	maxLive    = 8   // live pods per team (share.DefaultMaxPodsPerGPU per GPU)
)

var fractions = []string{"0.1", "0.2", "0.25", "0.3", "0.4", "0.5"}

func newRand(stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(env.size.seed), stream))
}

func teamObj(name string, gpus int32) *gpuvcv1.Team {
	return testobj.Team(name, "a100").GPUs(gpus).Fractions().Obj()
}

// churn is one team's pods: created and deleted at random, Σ ≤ maxLiveSum.
type churn struct {
	team      bench.Team
	rng       *rand.Rand
	live      []string
	frac      map[string]float64
	sum       float64
	next      int
	refused   int // requests that failed while the manager or API server was away
	ungatedIn int // pods the API server admitted without the gate (must stay 0)
}

// step creates or deletes one pod; it reports whether it created one.
func (c *churn) step(ctx context.Context) (bool, error) {
	f := fractions[c.rng.IntN(len(fractions))]
	v, _ := strconv.ParseFloat(f, 64)
	if len(c.live) > 0 && (len(c.live) >= maxLive || c.sum+v > maxLiveSum || c.rng.IntN(3) == 0) {
		i := c.rng.IntN(len(c.live))
		name := c.live[i]
		err := c.retry(ctx, func(ctx context.Context) error {
			err := c.team.Client.CoreV1().Pods(c.team.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		c.sum -= c.frac[name]
		c.live = slices.Delete(c.live, i, i+1)
		return false, err
	}
	name := fmt.Sprintf("churn-%d", c.next)
	c.next++
	pod := testobj.Pod(name, c.team.Namespace).GPUFraction(f).Obj()
	err := c.retry(ctx, func(ctx context.Context) error {
		got, err := c.team.Client.CoreV1().Pods(c.team.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) { // an earlier attempt went through
			got, err = c.team.Client.CoreV1().Pods(c.team.Namespace).Get(ctx, name, metav1.GetOptions{})
		}
		if err == nil && !bench.Gated(got) && got.Labels[contract.LabelShareGroup] == "" {
			c.ungatedIn++
		}
		return err
	})
	if err != nil {
		return false, err
	}
	c.live, c.sum = append(c.live, name), c.sum+v
	c.frac[name] = v
	return true, nil
}

func (c *churn) retry(ctx context.Context, op func(context.Context) error) error {
	var last error // the last not caused by the deadline (poll.EndedBy)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := op(ctx)
		if err == nil {
			return true, nil
		}
		c.refused++
		if !poll.EndedBy(ctx, err) {
			last = err
		}
		return false, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last error: %w)", err, last)
	}
	return err
}

// TestChurnUnderFaults: teams are created, fractional pods churn across them
// and the teams are deleted, while the manager is SIGKILLed at random instants
// and the API server restarted once mid-churn. A watcher checks Σ shares ≤ 1
// per GPU at every pod event. Afterwards: every live pod served (none stuck
// gated), the invariants of bench.CheckInvariants hold, no reservation outlives
// its pods, every team was fully provisioned and is fully gone.
func TestChurnUnderFaults(t *testing.T) {
	ctx := localcp.Context(t, 30*time.Minute)
	began := time.Now()
	w, err := watchShares()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()

	var teams []*gpuvcv1.Team
	var names []string
	for i := range env.size.teams {
		tm := teamObj(fmt.Sprintf("churn-%d", i), quotaGPUs)
		teams, names = append(teams, tm), append(names, tm.Name)
	}
	k := startKiller(newRand(1), env.size.killEvery)
	createTeams(ctx, t, teams)
	waitProvisioned(ctx, t, names, 8*time.Minute)
	for _, n := range names {
		if err := env.cp.WaitForServiceAccount(ctx, gpuvcv1.HostNamespace(n), "default"); err != nil {
			t.Fatal(err)
		}
	}
	provisionedIn := time.Since(began)

	churns := make([]*churn, len(names))
	for i, n := range names {
		churns[i] = &churn{team: bench.Team{Client: env.cp.Client, Namespace: gpuvcv1.HostNamespace(n), MaxPodsPerGPU: share.DefaultMaxPodsPerGPU},
			rng: newRand(uint64(10 + i)), frac: map[string]float64{}}
	}
	var created atomic.Int64
	var restartOnce sync.Once
	var restartErr error
	restarted := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, len(churns))
	churnBegan := time.Now()
	for i, c := range churns {
		wg.Go(func() {
			for created.Load() < int64(env.size.pods) {
				made, err := c.step(ctx)
				if err != nil {
					errs[i] = fmt.Errorf("team %s: %w", names[i], err)
					return
				}
				if made && created.Add(1) == int64(env.size.pods/2) {
					restartOnce.Do(func() {
						go func() { // the churn goes on meanwhile
							restartErr = env.cp.RestartAPIServer(ctx, 5*time.Second)
							close(restarted)
						}()
					})
				}
			}
		})
	}
	wg.Wait()
	churnTook := time.Since(churnBegan)
	<-restarted
	if restartErr != nil {
		t.Fatalf("restarting the API server: %v", restartErr)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := k.stop(ctx); err != nil {
		t.Fatal(err)
	}
	killsDuringChurn := env.mgr.kills

	stuck := waitServed(ctx, t, churns)
	for _, c := range churns {
		c.team.CheckInvariants(ctx, t)
	}
	leaked := waitNoReservations(ctx, t, churns)

	// Teams go while the manager is killed again.
	k = startKiller(newRand(3), env.size.killEvery)
	deleteTeams(ctx, t, names, 8*time.Minute)
	if err := k.stop(ctx); err != nil {
		t.Fatal(err)
	}
	left := leftovers(ctx, t, names)
	if len(left) > 0 {
		t.Errorf("%d objects left behind by the deleted teams:\n%s", len(left), strings.Join(left, "\n"))
	}

	events, maxGPU, violations := w.report()
	for _, v := range violations {
		t.Errorf("Σ over one GPU: %s", v)
	}
	refused, ungated := 0, 0
	for _, c := range churns {
		refused += c.refused
		ungated += c.ungatedIn
	}
	if ungated > 0 {
		t.Errorf("%d pods were admitted without the share gate", ungated)
	}
	t.Logf("faults: seed %d; %d teams provisioned in %s under kills; %d fractional pods created over %s (%d requests refused while the manager or API server was away); "+
		"%d manager kills until the churn ended, %d in all (+%d exits of its own, restarted), 1 API server restart; watcher saw %d pod events, max Σ on one GPU %.2f, %d over 1; "+
		"%d pods stuck gated, %d leaked reservations, %d objects left by deleted teams; total %s",
		env.size.seed, len(names), provisionedIn.Round(time.Second), created.Load(), churnTook.Round(time.Second), refused,
		killsDuringChurn, env.mgr.kills, env.mgr.exits, events, maxGPU, len(violations), stuck, leaked, len(left), time.Since(began).Round(time.Second))
}

// waitServed waits until no live share pod is gated; it returns how many still
// are at the deadline (and fails the test then).
func waitServed(ctx context.Context, t *testing.T, churns []*churn) int {
	t.Helper()
	var gated []string
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		gated = nil
		for _, c := range churns {
			l, err := c.team.Client.CoreV1().Pods(c.team.Namespace).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelGPUShare + "=true"})
			if err != nil {
				return false, nil
			}
			for _, p := range l.Items {
				if bench.Gated(&p) {
					gated = append(gated, describeGated(&p))
				}
			}
		}
		return len(gated) == 0, nil
	})
	if len(gated) > 0 {
		t.Errorf("%d pods stuck gated after the faults:\n%s", len(gated), strings.Join(gated, "\n"))
	}
	return len(gated)
}

func describeGated(p *corev1.Pod) string {
	return fmt.Sprintf("%s/%s (group %q, units %q, created %s)", p.Namespace, p.Name,
		p.Labels[contract.LabelShareGroup], p.Annotations[contract.AnnotationShareUnits], p.CreationTimestamp.Format(time.TimeOnly))
}

// waitNoReservations deletes every share pod and waits until the share
// controller has removed every reservation; it returns how many are left at
// the deadline (leaked) and fails the test then.
func waitNoReservations(ctx context.Context, t *testing.T, churns []*churn) int {
	t.Helper()
	for _, c := range churns {
		if err := retry(ctx, func(ctx context.Context) error {
			return c.team.Client.CoreV1().Pods(c.team.Namespace).DeleteCollection(ctx,
				metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: contract.LabelGPUShare + "=true"})
		}); err != nil {
			t.Fatal(err)
		}
	}
	var left []string
	_ = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		left = nil
		for _, c := range churns {
			for _, r := range c.team.Reservations(ctx, t) {
				left = append(left, r.Namespace+"/"+r.Name)
			}
		}
		return len(left) == 0, nil
	})
	if len(left) > 0 {
		t.Errorf("%d reservations left a minute after their pods were deleted: %v", len(left), left)
	}
	return len(left)
}
