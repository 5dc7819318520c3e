package idle_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// utilization is a settable idle.Utilization: what the node agent will report.
type utilization struct {
	mu      sync.Mutex
	percent map[string]float64 // namespace/name
}

func (u *utilization) set(ns, name string, p float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.percent[ns+"/"+name] = p
}

func (u *utilization) PodGPUUtilization(_ context.Context, ns, name string) (float64, bool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p, ok := u.percent[ns+"/"+name]
	return p, ok, nil
}

func gpuPodTeam(ctx context.Context, t *testing.T, team, action string) string {
	t.Helper()
	tm := testobj.Team(team, "a100").GPUs(8).SleepAfter(time.Hour).IdleGPUPods(10*time.Minute, action, 5).Obj()
	require.NoError(t, c.Create(ctx, tm))
	require.NoError(t, c.Create(ctx, testobj.TeamNamespace(team, "a100")))
	ns := gpuvcv1.HostNamespace(team)
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), tm)
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	for _, name := range []string{"idle", "busy"} {
		require.NoError(t, c.Create(ctx, testobj.Pod(name, ns).GPUs("1").InPool("a100").Obj()))
		poll.UntilSeen(ctx, t, time.Minute, "pod "+name+" running on kwok", func(ctx context.Context) (bool, string, error) {
			p := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return false, "", err
			}
			return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase), nil
		})
	}
	return ns
}

// reaperOfIdleAndBusy is a reaper on a fake clock and recorder whose agent
// reports ns/idle at 3 % and ns/busy at 80 %, the pods of gpuPodTeam.
func reaperOfIdleAndBusy(ns string) (*utilization, *idle.GPUPodReaper, *clocktesting.FakeClock, *events.FakeRecorder) {
	util := &utilization{percent: map[string]float64{}}
	util.set(ns, "idle", 3)
	util.set(ns, "busy", 80)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	rec := events.NewFakeRecorder(20)
	return util, idle.NewGPUPodReaper(c, c, rec, util, clk), clk, rec
}

// reapAfterTenMinutes ticks r at 0 and 9 minutes, when it must not act (the
// spec.idle.gpuPods.after of gpuPodTeam is 10m), then at 10 minutes, and returns the
// events of that last tick.
func reapAfterTenMinutes(ctx context.Context, t *testing.T, r *idle.GPUPodReaper, clk *clocktesting.FakeClock, rec *events.FakeRecorder) []string {
	t.Helper()
	r.Tick(ctx)
	clk.Step(9 * time.Minute)
	r.Tick(ctx)
	require.Empty(t, drain(rec), "acted before spec.idle.gpuPods.after")
	clk.Step(time.Minute)
	r.Tick(ctx)
	return drain(rec)
}

func drain(rec *events.FakeRecorder) []string {
	var got []string
	for {
		select {
		case e := <-rec.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

// TestIdleGPUPods: a GPU pod at or below the team's threshold for `after` gets a
// GPUIdle event and, with action Evict, is evicted; a busy pod is left alone; a
// pod is acted on once.
func TestIdleGPUPods(t *testing.T) {
	for _, action := range []string{gpuvcv1.IdleActionNotify, gpuvcv1.IdleActionEvict} {
		t.Run(action, func(t *testing.T) {
			ctx := integration(t)
			team := "gpuidle-" + strings.ToLower(action)
			ns := gpuPodTeam(ctx, t, team, action)
			_, r, clk, rec := reaperOfIdleAndBusy(ns)

			got := reapAfterTenMinutes(ctx, t, r, clk, rec)
			require.Len(t, got, 1, "one event, for the idle pod only: %v", got)
			require.Contains(t, got[0], "GPUIdle")
			require.Contains(t, got[0], "at or below 5%")
			require.Contains(t, got[0], "action "+action)

			p := &corev1.Pod{}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "idle"}, p)
			if action == gpuvcv1.IdleActionEvict {
				gone := err != nil && apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil
				require.True(t, gone, "the idle pod was not evicted: %v", err)
			} else {
				require.NoError(t, err)
				require.Nil(t, p.DeletionTimestamp, "Notify must not remove the pod")
			}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "busy"}, p))
			require.Nil(t, p.DeletionTimestamp, "a busy pod was touched")

			clk.Step(time.Hour)
			r.Tick(ctx)
			require.Empty(t, drain(rec), fmt.Sprintf("the pod was acted on twice (%s)", action))
		})
	}
}
