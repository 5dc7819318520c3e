package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// createTeams creates the Teams concurrently, retrying while the API server
// is away.
func createTeams(ctx context.Context, t *testing.T, teams []*gpuvcv1.Team) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(teams))
	for i, tm := range teams {
		wg.Go(func() {
			errs[i] = retry(ctx, func(ctx context.Context) error {
				err := env.teams.Create(ctx, tm.DeepCopy())
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				return err
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creating team %s: %v", teams[i].Name, err)
		}
	}
}

// provisioned: the manager reports the host resources and the vCluster
// release in place for the Team's current spec (kwok runs no container, so the
// vCluster never exports a kubeconfig and Ready stays false).
func provisioned(tm *gpuvcv1.Team) bool {
	return tm.Status.ObservedGeneration == tm.Generation &&
		apimeta.IsStatusConditionTrue(tm.Status.Conditions, gpuvcv1.ConditionHostResourcesReady) &&
		apimeta.IsStatusConditionTrue(tm.Status.Conditions, gpuvcv1.ConditionVClusterReady)
}

// waitProvisioned waits until every Team is provisioned; on timeout it names
// the teams left half-created and their conditions.
func waitProvisioned(ctx context.Context, t *testing.T, names []string, timeout time.Duration) {
	t.Helper()
	var half []string // of the last complete look
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var now []string
		for _, n := range names {
			tm, err := env.teams.Get(ctx, n)
			switch {
			case poll.EndedBy(ctx, err): // keep the last complete look
				return false, nil
			case err != nil:
				now = append(now, fmt.Sprintf("%s: %v", n, err))
			case !provisioned(tm):
				now = append(now, fmt.Sprintf("%s: %s", n, conditions(tm)))
			}
		}
		half = now
		return len(half) == 0, nil
	})
	if err != nil {
		t.Fatalf("%d of %d teams half-created after %s:\n%s", len(half), len(names), timeout, strings.Join(half, "\n"))
	}
}

func conditions(tm *gpuvcv1.Team) string {
	var parts []string
	for _, c := range tm.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("generation %d observed %d; %s", tm.Generation, tm.Status.ObservedGeneration, strings.Join(parts, "; "))
}

// deleteTeams deletes the Teams concurrently and waits until they are gone.
func deleteTeams(ctx context.Context, t *testing.T, names []string, timeout time.Duration) {
	t.Helper()
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			if err := retry(ctx, func(ctx context.Context) error { _, err := env.teams.Delete(ctx, n); return err }); err != nil {
				t.Errorf("deleting team %s: %v", n, err)
			}
		})
	}
	wg.Wait()
	var half []string // of the last complete look
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var now []string
		for _, n := range names {
			tm, err := env.teams.Get(ctx, n)
			switch {
			case poll.EndedBy(ctx, err): // keep the last complete look
				return false, nil
			case errors.Is(err, teamctl.ErrNotFound):
			case err != nil:
				now = append(now, fmt.Sprintf("%s: %v", n, err))
			default:
				now = append(now, fmt.Sprintf("%s: %s", n, conditions(tm)))
			}
		}
		half = now
		return len(half) == 0, nil
	})
	if err != nil {
		t.Fatalf("%d of %d teams half-deleted after %s:\n%s", len(half), len(names), timeout, strings.Join(half, "\n"))
	}
}

// leftovers lists what the teams left on the host: namespaces, Helm release
// Secrets, reservation pods, and cluster-scoped RBAC naming a team namespace.
func leftovers(ctx context.Context, t *testing.T, names []string) []string {
	t.Helper()
	c := env.cp.Client
	nss := map[string]bool{}
	for _, n := range names {
		nss[gpuvcv1.HostNamespace(n)] = true
	}
	var left []string
	must := func(err error) {
		if err != nil {
			t.Fatalf("listing leftovers: %v", err)
		}
	}
	nsList, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	must(err)
	for _, ns := range nsList.Items {
		if nss[ns.Name] {
			left = append(left, "namespace "+ns.Name)
		}
	}
	secrets, err := c.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	must(err)
	for _, s := range secrets.Items {
		if nss[s.Namespace] {
			left = append(left, "Helm release secret "+s.Namespace+"/"+s.Name)
		}
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelRole + "=" + contract.RoleReservation})
	must(err)
	for _, p := range pods.Items {
		if nss[p.Namespace] {
			left = append(left, "reservation "+p.Namespace+"/"+p.Name)
		}
	}
	roles, err := c.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	must(err)
	bindings, err := c.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	must(err)
	var clusterNames []string
	for _, r := range roles.Items {
		clusterNames = append(clusterNames, "ClusterRole "+r.Name)
	}
	for _, b := range bindings.Items {
		clusterNames = append(clusterNames, "ClusterRoleBinding "+b.Name)
	}
	for _, cn := range clusterNames {
		for ns := range nss {
			if strings.Contains(cn, ns) {
				left = append(left, cn)
			}
		}
	}
	return left
}

// retry runs op until it succeeds, for at most a minute: requests fail while
// the API server restarts.
func retry(ctx context.Context, op func(context.Context) error) error {
	var last error // the last not caused by the deadline (poll.EndedBy)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := op(ctx)
		if err != nil && !poll.EndedBy(ctx, err) {
			last = err
		}
		return err == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last error: %w)", err, last)
	}
	return err
}

// TestConcurrentTeamsLeaveNothing creates teams all at once and deletes them
// all at once while the manager is killed at random: every team must end
// provisioned, then gone with nothing left behind.
func TestConcurrentTeamsLeaveNothing(t *testing.T) {
	ctx := localcp.Context(t, 20*time.Minute)
	n := env.size.together
	var teams []*gpuvcv1.Team
	var names []string
	for i := range n {
		tm := teamObj(fmt.Sprintf("conc-%02d", i), 1)
		teams, names = append(teams, tm), append(names, tm.Name)
	}
	rng := newRand(2)
	began, killsBefore := time.Now(), env.mgr.kills
	k := startKiller(rng, env.size.teamKillEvery)
	createTeams(ctx, t, teams)
	waitProvisioned(ctx, t, names, 8*time.Minute)
	created := time.Since(began)
	deleteTeams(ctx, t, names, 8*time.Minute)
	if err := k.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(ctx, t, names); len(left) > 0 {
		t.Errorf("%d objects left behind by %d deleted teams:\n%s", len(left), n, strings.Join(left, "\n"))
	}
	t.Logf("faults: seed %d; %d teams created concurrently, provisioned in %s, deleted in %s, %d manager kills meanwhile; %d objects left",
		env.size.seed, n, created.Round(time.Second), (time.Since(began) - created).Round(time.Second), env.mgr.kills-killsBefore, len(leftovers(ctx, t, names)))
}
