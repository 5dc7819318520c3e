package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// BenchmarkTeamCreate is BenchmarkScale's "team create → release applied" and
// "restart" alone, without pods, and with the steps between host objects and
// VClusterReady as a watch of the host sees them (timeline_test.go), to say
// where the time goes. Opt-in: it runs only with BENCH_CREATE set to the
// gpuvc builds to compare, comma-separated ("." builds this tree), run in turn
// BENCH_ROUNDS times (default 1) so A/B rounds interleave; BENCH_TEAMS teams
// (default 20) one at a time, then BENCH_RESTARTS restarts (default 1) with
// them in place. With
// BENCH_PROFILE_DIR, a CPU profile of each manager over the creates and over
// the restart.
func BenchmarkTeamCreate(b *testing.B) {
	list := os.Getenv("BENCH_CREATE")
	if list == "" {
		b.Skip("set BENCH_CREATE to the gpuvc builds to compare (\".\" for this tree); see docs/benchmarks.md")
	}
	cp := localcp.ForTest(b)
	n := envInt(b, "BENCH_TEAMS", 20)
	rounds := envInt(b, "BENCH_ROUNDS", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	dir := b.TempDir()
	var bins []string
	for _, bin := range strings.Split(list, ",") {
		if bin == "." {
			built, err := gpuvcbin.Build(ctx, dir)
			if err != nil {
				b.Fatal(err)
			}
			bin = built
		}
		bins = append(bins, bin)
	}
	for r := range rounds {
		for i, bin := range bins {
			b.Run(fmt.Sprintf("build=%d/round=%d", i, r), func(b *testing.B) {
				for j := range b.N {
					createRound(ctx, b, cp, bin, dir, n, fmt.Sprintf("c%d-%d-%d", i, r, j))
				}
			})
		}
	}
}

func createRound(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, bin, dir string, n int, run string) {
	m, _, err := startManager(ctx, bin, dir, cp)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { m.Stop() }()
	teams, tw := teamsAndWatch(ctx, b, cp)
	defer tw.stop()
	stopTimeline, err := watchTimeline(ctx, cp.Client, tw)
	if err != nil {
		b.Fatal(err)
	}
	defer stopTimeline()
	profiled := m.profileCPU(ctx, run+"-create", time.Duration(n)*2*time.Second)

	steps := append([]string{hostObjects}, append(timelineSteps, gpuvcv1.ConditionVClusterReady)...)
	lat := map[string][]time.Duration{}
	var names []string
	for i := range n {
		t := fmt.Sprintf("%s-%d", run, i)
		start := time.Now()
		if err := teams.Create(ctx, mixTeam(t, i%2 == 1, 10)); err != nil {
			b.Fatal(err)
		}
		poll.Until(ctx, b, 5*time.Minute, "team "+t+" VClusterReady", func(context.Context) (bool, error) {
			_, ok := tw.at(t, gpuvcv1.ConditionVClusterReady)
			return ok, nil
		})
		for _, s := range steps {
			if at, ok := tw.at(t, s); ok {
				lat[s] = append(lat[s], at.Sub(start))
			}
		}
		names = append(names, t)
		exportKubeconfig(ctx, b, cp, t)
	}
	waitReady(ctx, b, tw, names)
	profiled()
	m.Stop()

	// Restarts with the teams in place, BENCH_RESTARTS of them (default 1);
	// the median is reported.
	var restarts []time.Duration
	for k := range envInt(b, "BENCH_RESTARTS", 1) {
		restartAt := time.Now()
		m, _, err = startManager(ctx, bin, dir, cp)
		if err != nil {
			b.Fatal(err)
		}
		profiled = m.profileCPU(ctx, fmt.Sprintf("%s-restart%d", run, k), 5*time.Second)
		poll.UntilSeen(ctx, b, 10*time.Minute, fmt.Sprintf("%d teams reconciled after a restart", n), func(ctx context.Context) (bool, string, error) {
			done, depth, err := m.teamQueue(ctx)
			return done >= float64(n) && depth == 0, fmt.Sprintf("%.0f reconciles, %.0f queued", done, depth), err
		})
		restarts = append(restarts, time.Since(restartAt))
		profiled()
		m.Stop()
	}

	b.ReportMetric(float64(n), "teams")
	for _, s := range steps {
		if len(lat[s]) > 0 { // a step the host never showed (no EndpointSlice controller…)
			b.ReportMetric(bench.Percentile(lat[s], 0.5), s+"-p50-ms")
		}
	}
	b.ReportMetric(bench.Percentile(lat[gpuvcv1.ConditionVClusterReady], 0.99), "release-p99-ms")
	b.ReportMetric(bench.Percentile(restarts, 0.5)/1000, "restart-s")
	if dir := os.Getenv("BENCH_PROFILE_DIR"); dir != "" {
		b.Logf("profiles: %s", filepath.Join(dir, run+"-*"))
	}

	c, err := client.New(cp.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	removeTeams(ctx, b, c, cp, names)
}
