package team_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
)

// TestNewTeamReportsEachProvisioningStep: from the manager's first look, a new
// Team's Ready condition says what is happening, step by step, before the Helm
// install ends; a later reconcile that changes nothing writes no status.
func TestNewTeamReportsEachProvisioningStep(t *testing.T) {
	ctx := integration(t)
	wc, err := client.NewWithWatch(host.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	w, err := wc.Watch(ctx, &gpuvcv1.TeamList{}, client.MatchingFields{"metadata.name": "steps"})
	require.NoError(t, err)
	defer w.Stop()
	events := make(chan *gpuvcv1.Team, 100)
	go func() {
		for ev := range w.ResultChan() {
			if tm, ok := ev.Object.(*gpuvcv1.Team); ok && ev.Type == watch.Modified {
				events <- tm
			}
		}
		close(events)
	}()

	createTeam(ctx, t, testobj.Team("steps", "a100").GPUs(1).Obj())
	// Every status the API server stored, in order, until the control plane is reported.
	var seen []string
	for tm := range events {
		if len(tm.Status.Conditions) == 0 {
			continue // the finalizer
		}
		r := apimeta.FindStatusCondition(tm.Status.Conditions, gpuvcv1.ConditionReady)
		require.NotNil(t, r, "the first status written has a Ready condition: %+v", tm.Status.Conditions)
		line := string(r.Status) + " " + r.Reason + ": " + r.Message
		if len(seen) == 0 || seen[len(seen)-1] != line {
			seen = append(seen, line)
		}
		if apimeta.FindStatusCondition(tm.Status.Conditions, gpuvcv1.ConditionVClusterReady) != nil {
			break
		}
	}
	require.GreaterOrEqual(t, len(seen), 4, "statuses: %q", seen)
	require.Equal(t, []string{
		"False Provisioning: creating namespace, quota and policies; installing the vCluster chart next",
		"False Provisioning: namespace team-steps created; applying quota, limits, admission parameters, network policies and RBAC; installing the vCluster chart next",
		"False Provisioning: host resources ready; installing the vCluster chart (release team-steps/steps); waiting for its control plane next",
	}, seen[:3])
	require.NotContains(t, seen[3], "Provisioning", "then the pass's summary names what is left (the control plane, the kubeconfig)")

	exportKubeconfig(ctx, t, "steps")
	tm := &gpuvcv1.Team{}
	get(ctx, t, ns("steps"), tm, func() (bool, string) { return conditionTrue(tm, gpuvcv1.ConditionReady) })
	idle := func() (bool, string) {
		n, busy := teamReconciles(t)
		return busy == 0, fmt.Sprintf("%v reconciles, %v queued or running", n, busy)
	}
	poll.Until(ctx, t, time.Minute, "the team reconciler idle", func(context.Context) (bool, error) { ok, _ := idle(); return ok, nil })
	require.NoError(t, c.Get(ctx, ns("steps"), tm))
	rv := tm.ResourceVersion

	// Drift repair: the members' Role is put back; the Team is not written at all.
	before, _ := teamReconciles(t)
	require.NoError(t, c.Delete(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team-steps", Name: team.MemberRoleName}}))
	get(ctx, t, inNS("team-steps", team.MemberRoleName), &rbacv1.Role{}, nil)
	poll.Until(ctx, t, time.Minute, "the repair reconciled", func(context.Context) (bool, error) {
		n, busy := teamReconciles(t)
		return n > before && busy == 0, nil
	})
	require.NoError(t, c.Get(ctx, ns("steps"), tm))
	require.Equal(t, rv, tm.ResourceVersion, "a reconcile that changed nothing wrote the Team: %+v", tm.Status.Conditions)
}

// teamReconciles reads the in-process manager's metrics: Team reconciles
// finished, and Teams queued or being reconciled.
func teamReconciles(t *testing.T) (done, busy float64) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			ours := false
			for _, l := range m.GetLabel() {
				ours = ours || (l.GetName() == "controller" || l.GetName() == "name") && l.GetValue() == "team"
			}
			if !ours {
				continue
			}
			switch f.GetName() {
			case "controller_runtime_reconcile_total":
				done += m.GetCounter().GetValue()
			case "workqueue_depth", "controller_runtime_active_workers":
				busy += m.GetGauge().GetValue()
			}
		}
	}
	return done, busy
}
