package bench_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/manager/teamctl"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// The benchmarks of this package run the harness through gpuvc's manager, in
// process as the binary runs it (manager.New via managertest: Team reconciler,
// pod webhook served on loopback, share controller, CEL fence), against the
// local control plane with kwok GPU nodes. The team is a real Team, provisioned
// by the manager (namespace, quota, admission parameters, reservation account,
// vCluster release) before anything is measured. kwok runs no container, so
// the vCluster never exports its kubeconfig and the Team stops short of Ready:
// everything the syncer uses is in place once VClusterReady holds.

const (
	teamName = "bench"
	teamNS   = "team-" + teamName
	quotaGPU = 8 // bench.Burst needs room for 8 reservations
)

var env struct {
	cp   *localcluster.ControlPlane
	team bench.Team
}

// TestMain starts the control plane and the manager only when benchmarks run:
// the package has no tests, and `make test` should not pay for a manager.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	var opts localcluster.Options
	if os.Getenv("BENCH_PROFILE_DIR") != "" {
		// Where the API server's time goes (profiler).
		opts.ExtraAPIServerArgs = []string{"--profiling=true"}
	}
	os.Exit(localcp.RunTests(m, opts, setUp))
}

func setUp(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
	env.cp = cp
	started := time.Now()
	mgr, err := managertest.Start(ctx, cp, team.Options{})
	if err != nil {
		return nil, err
	}
	stop := func() {
		if err := mgr.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the manager:", err)
		}
	}
	teams, err := teamctl.New(cp.Config)
	if err == nil {
		err = teams.Create(ctx, testobj.Team(teamName, "a100").GPUs(quotaGPU).Fractions().Obj())
	}
	if err == nil {
		err = waitVClusterReady(ctx, teams, teamName)
	}
	if err != nil {
		stop()
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "bench: manager running, team %s ready after %s\n", teamName, time.Since(started).Round(time.Millisecond))
	// Share pods are created as an administrator: the manager's webhook gates
	// them and its share controller serves them like any tenant's.
	env.team = bench.Team{Client: cp.Client, Namespace: teamNS, MaxPodsPerGPU: 8, Local: metrics.Registry, Controller: share.ControllerName}
	return stop, nil
}

// waitVClusterReady waits until the manager has provisioned the team up to its
// vCluster release.
func waitVClusterReady(ctx context.Context, teams *teamctl.Client, teamName string) error {
	var last *gpuvcv1.Team
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		t, err := teams.Get(ctx, teamName)
		if err != nil {
			return false, err
		}
		last = t
		return apimeta.IsStatusConditionTrue(t.Status.Conditions, gpuvcv1.ConditionVClusterReady), nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("team %s: vCluster not ready: %w (conditions %+v)", teamName, err, last.Status.Conditions)
	}
	return err
}
