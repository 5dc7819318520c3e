package teamctl

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// RequestIdle asks the manager to put a team's vCluster to sleep now
// (contract.IdleRequestSleep) or to wake it (contract.IdleRequestWake).
func (c *Client) RequestIdle(ctx context.Context, name, request string) error {
	t, err := c.Get(ctx, name)
	if err != nil {
		return err
	}
	if request == contract.IdleRequestSleep && (t.Spec.Idle == nil || t.Spec.Idle.VCluster == nil) {
		return fmt.Errorf("team %s has no spec.idle.vcluster: without it nothing wakes a sleeping vCluster on a connection; set spec.idle.vcluster.sleepAfter (e.g. 30m) with `gpuvc team apply -f`", name)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{contract.AnnotationIdleRequest: request}}})
	return c.explain(c.c.Patch(ctx, t, client.RawPatch(types.MergePatchType, patch)))
}

// WaitAsleep waits until the manager has put the team's vCluster to sleep.
func (c *Client) WaitAsleep(ctx context.Context, name string, timeout time.Duration, progress Progress) (*gpuvcv1.Team, error) {
	return c.wait(ctx, name, timeout, progress, goal{
		verb: "asleep",
		reached: func(t *gpuvcv1.Team) bool {
			return t != nil && requestDone(t) && apimeta.IsStatusConditionTrue(t.Status.Conditions, gpuvcv1.ConditionAsleep)
		},
		awaiting: asleepCondition,
	})
}

// WaitAwake waits until the manager has woken the team's vCluster (or found it
// awake).
func (c *Client) WaitAwake(ctx context.Context, name string, timeout time.Duration, progress Progress) (*gpuvcv1.Team, error) {
	return c.wait(ctx, name, timeout, progress, goal{
		verb: "awake",
		reached: func(t *gpuvcv1.Team) bool {
			return t != nil && requestDone(t) && !apimeta.IsStatusConditionTrue(t.Status.Conditions, gpuvcv1.ConditionAsleep)
		},
		awaiting: asleepCondition,
	})
}

func requestDone(t *gpuvcv1.Team) bool {
	_, pending := t.Annotations[contract.AnnotationIdleRequest]
	return !pending
}

func asleepCondition(t *gpuvcv1.Team) *metav1.Condition {
	if c := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionAsleep); c != nil {
		return c
	}
	return &metav1.Condition{Reason: "Pending", Message: "the manager has not acted on the request yet (it reads it at once; is it running?)"}
}
