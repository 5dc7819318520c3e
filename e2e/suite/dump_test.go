package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// dumpTeamIfFailed logs, when the test has failed, what the host holds of a
// team: its pods (phase, node, gates, waiting containers, restarts), the
// namespace's latest events and the logs of its reservation pods — what a CI
// failure must show, since the cluster is gone afterwards.
func dumpTeamIfFailed(t *testing.T, team string) {
	t.Helper()
	if !t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := "team-" + team
	c := backend.Client()
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("dump %s: listing pods: %v", ns, err)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "host pods of %s:\n", ns)
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  %s: %s on %q, created %s", p.Name, p.Status.Phase, p.Spec.NodeName, p.CreationTimestamp.Format(time.TimeOnly))
		for _, g := range p.Spec.SchedulingGates {
			fmt.Fprintf(&b, ", gate %s", g.Name)
		}
		for _, s := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, ", %s restarts %d", s.Name, s.RestartCount)
			if w := s.State.Waiting; w != nil {
				fmt.Fprintf(&b, " waiting %s %q", w.Reason, w.Message)
			}
			if r := s.State.Running; r != nil {
				fmt.Fprintf(&b, " running since %s", r.StartedAt.Format(time.TimeOnly))
			}
		}
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue && cond.Message != "" {
				fmt.Fprintf(&b, ", %s: %s", cond.Type, cond.Message)
			}
		}
		b.WriteString("\n")
	}
	if events, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		items := events.Items
		slices.SortFunc(items, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
		if len(items) > 40 {
			items = items[len(items)-40:]
		}
		fmt.Fprintf(&b, "latest events of %s:\n", ns)
		for _, e := range items {
			fmt.Fprintf(&b, "  %s %s/%s %s: %s\n", eventTime(e).Format(time.TimeOnly), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	for _, p := range pods.Items {
		if p.Labels[contract.LabelRole] != contract.RoleReservation || p.Spec.NodeName == "" {
			continue
		}
		raw, err := c.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Timestamps: true}).DoRaw(ctx)
		fmt.Fprintf(&b, "logs of reservation %s (err %v):\n%s\n", p.Name, err, raw)
	}
	t.Log(b.String())
}

// eventTime is when an event last happened, whichever field its writer set.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
