package idle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// conditionBound is how soon the Asleep condition must follow the control plane
// once the change is on the API server. The Sleeper reacts to the watch event
// in milliseconds; the rest is room for a loaded 2-core test machine. Without
// the events it waited for its next look, --idle-interval (30 s by default,
// an hour here).
const conditionBound = 5 * time.Second

// TestAsleepConditionFollowsTheControlPlane runs the Sleeper as the manager
// does (its loop, events from an informer cache) with an interval that never
// comes (a fake clock), so only events can move it: a Waking condition written
// back over Awake by a writer holding an older copy of the Team (what the Team
// reconciler's status patch did when the woken control plane became ready) is
// corrected within conditionBound; a control plane scaled up by someone else
// while asleep (a Helm upgrade resets the replicas, a leader that died
// mid-wake) is reported Awake within conditionBound.
func TestAsleepConditionFollowsTheControlPlane(t *testing.T) {
	ctx := integration(t)
	const team = "waking"
	ns := gpuvcv1.HostNamespace(team)
	free, err := localcluster.FreePorts(1)
	require.NoError(t, err)
	ca := newTestCA(t)
	standInVCluster(ctx, t, team, 30*time.Minute, ca, "https://127.0.0.1:"+strconv.Itoa(free[0]))

	informers, err := cache.New(cfg, cache.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	s := idle.New(c, c, nil, idle.Options{
		Clock: clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)), Interval: time.Hour,
		WakerIP: "192.0.2.10", ListenHost: "127.0.0.1", RouteSettle: 10 * time.Millisecond,
		Ports: idle.PortRange{First: int32(free[0]), Last: int32(free[0]) + 99},
	})
	require.NoError(t, s.AddEventHandlers(ctx, informers))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	t.Cleanup(func() { stop(); <-done; <-done })
	go func() { _ = informers.Start(runCtx); done <- struct{}{} }()
	require.True(t, informers.WaitForCacheSync(ctx))
	go func() { _ = s.Start(runCtx); done <- struct{}{} }()

	request := func(what string) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{contract.AnnotationIdleRequest: what}}})
		require.NoError(t, c.Patch(ctx, &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: team}}, client.RawPatch(types.MergePatchType, patch)))
	}
	// reaches waits until the Asleep condition has reason (and a message
	// starting with prefix), and returns how long that took.
	reaches := func(reason string, within time.Duration, prefix ...string) time.Duration {
		t.Helper()
		began := time.Now()
		poll.UntilSeen(ctx, t, within, "Asleep condition "+reason+" "+strings.Join(prefix, ""), func(ctx context.Context) (bool, string, error) {
			tm := &gpuvcv1.Team{}
			if err := c.Get(ctx, client.ObjectKey{Name: team}, tm); err != nil {
				return false, err.Error(), nil
			}
			cond := apimeta.FindStatusCondition(tm.Status.Conditions, gpuvcv1.ConditionAsleep)
			if cond == nil {
				return false, "no condition", nil
			}
			return cond.Reason == reason && strings.HasPrefix(cond.Message, strings.Join(prefix, "")), cond.Reason + ": " + cond.Message, nil
		})
		return time.Since(began)
	}

	request(contract.IdleRequestSleep)
	reaches(gpuvcv1.ReasonAsleep, time.Minute)
	request(contract.IdleRequestWake)
	reaches(gpuvcv1.ReasonAwake, 2*time.Minute)
	// The look the wake's own events asked for has run: nothing is pending.
	reaches(gpuvcv1.ReasonAwake, time.Minute, "idle for")

	// A status patch from a copy read while the wake ran puts Waking back.
	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: team}, tm))
	stale := tm.DeepCopy()
	apimeta.SetStatusCondition(&stale.Status.Conditions, metav1.Condition{Type: gpuvcv1.ConditionAsleep, Status: metav1.ConditionTrue,
		Reason: gpuvcv1.ReasonWaking, Message: "a connection arrived: the control plane is starting"})
	require.NoError(t, c.Status().Patch(ctx, stale, client.MergeFrom(tm)))
	took := reaches(gpuvcv1.ReasonAwake, conditionBound)
	t.Logf("a stale Waking corrected in %v", took.Round(time.Millisecond))

	// Asleep again, then scaled up by someone else: Awake once that is seen.
	request(contract.IdleRequestSleep)
	reaches(gpuvcv1.ReasonAsleep, time.Minute)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))
	require.NoError(t, c.Patch(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: team}}, patch))
	took = reaches(gpuvcv1.ReasonAwake, conditionBound)
	t.Logf("a control plane scaled up elsewhere reported Awake in %v", took.Round(time.Millisecond))
	cond := asleepCondition(ctx, t, team)
	require.Equal(t, metav1.ConditionFalse, cond.Status, fmt.Sprintf("%s: %s", cond.Reason, cond.Message))
}

// TestClearsAnAsleepConditionWrittenTheOldWay: a Team whose status an older
// gpuvc merge-patched (Update operations own every field, and would keep a
// field its owner stops applying) no longer asks for sleep: the idle policy's
// next look removes its Asleep condition and status.idle, and the Team
// reconciler's conditions stay.
func TestClearsAnAsleepConditionWrittenTheOldWay(t *testing.T) {
	ctx := integration(t)
	const team = "upgraded"
	standInVCluster(ctx, t, team, 30*time.Minute, newTestCA(t), "https://127.0.0.1:1")
	tm := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: team}}
	require.NoError(t, c.Patch(ctx, tm, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"idle":null}}`))))

	at := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	orig := tm.DeepCopy()
	for typ, reason := range map[string]string{gpuvcv1.ConditionReady: "Ready", gpuvcv1.ConditionKubeconfigReady: "Exported", gpuvcv1.ConditionAsleep: gpuvcv1.ReasonAsleep} {
		apimeta.SetStatusCondition(&tm.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: "m", LastTransitionTime: at})
	}
	tm.Status.Idle = &gpuvcv1.IdleStatus{AsleepSince: &at}
	require.NoError(t, c.Status().Patch(ctx, tm, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))

	idle.New(c, c, nil, idle.Options{Clock: clocktesting.NewFakeClock(at.Time), WakerIP: "192.0.2.10", ListenHost: "127.0.0.1"}).Tick(ctx)

	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: team}, tm))
	var got []string
	for _, cond := range tm.Status.Conditions {
		got = append(got, cond.Type+"="+string(cond.Status))
	}
	require.ElementsMatch(t, []string{"Ready=True", "KubeconfigReady=True"}, got)
	require.Nil(t, tm.Status.Idle)
	for _, e := range tm.ManagedFields {
		require.False(t, e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationUpdate,
			"an Update entry of the status is left: %s", e.Manager)
	}
}
