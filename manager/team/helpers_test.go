package team_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
)

// eventually polls cond until it holds or the deadline passes, reporting the last
// reason it gave.
func eventually(ctx context.Context, t *testing.T, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, why := cond(ctx)
		last = why
		return ok, nil
	})
	require.NoError(t, err, "%s never happened; last: %s", what, last)
}

// get polls until obj exists and cond holds for it.
func get(ctx context.Context, t *testing.T, key types.NamespacedName, obj client.Object, cond func() (bool, string)) {
	t.Helper()
	eventually(ctx, t, key.String(), func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, err.Error()
		}
		if cond == nil {
			return true, ""
		}
		return cond()
	})
}

func gone(ctx context.Context, t *testing.T, key types.NamespacedName, obj client.Object) {
	t.Helper()
	eventually(ctx, t, key.String()+" deleted", func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, "still there"
	})
}

func conditionTrue(t *gpuvcv1.Team, typ string) (bool, string) {
	cond := apimeta.FindStatusCondition(t.Status.Conditions, typ)
	if cond == nil {
		return false, typ + " not reported"
	}
	return cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == t.Generation,
		string(cond.Status) + " " + cond.Reason + ": " + cond.Message
}

func ns(name string) types.NamespacedName { return types.NamespacedName{Name: name} }

func inNS(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// createTeam creates a Team and deletes it at the end of the test.
func createTeam(ctx context.Context, t *testing.T, team *gpuvcv1.Team) {
	t.Helper()
	require.NoError(t, c.Create(ctx, team))
	t.Cleanup(func() {
		if t.Failed() { // tell why: the Team's conditions say what the manager saw
			got := &gpuvcv1.Team{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(team), got); err == nil {
				for _, cond := range got.Status.Conditions {
					t.Logf("team %s condition %s=%s %s: %s", team.Name, cond.Type, cond.Status, cond.Reason, cond.Message)
				}
			}
			logNamespace(t, gpuvcv1.HostNamespace(team.Name))
		}
		_ = c.Delete(context.Background(), team)
	})
}

// logNamespace logs the pods and events of a namespace, to explain a failure.
func logNamespace(t *testing.T, namespace string) {
	ctx := context.Background()
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace)); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s: %s", p.Name, poll.DescribePod(&p))
		}
	}
	events := &corev1.EventList{}
	if err := c.List(ctx, events, client.InNamespace(namespace)); err == nil {
		for _, e := range events.Items {
			t.Logf("event %s/%s %s: %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}
