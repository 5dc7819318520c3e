package scale

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// BenchmarkTeamWorkers creates a batch of Teams at once (as `gpuvc apply -f
// teams/` does) against a warm `gpuvc manager` process, once per number of
// Team workers, and reports the time until every Team's vCluster release is
// applied with its control plane up (VClusterReady) and until every Team is
// Ready. BENCH_WORKERS lists the worker counts (e.g. "1,4"); BENCH_TEAMS sets
// the batch, BENCH_MANAGER_FLAGS more manager flags. `make bench` (which sets
// BENCH_SCALE) runs 1 and 4 workers on 20 Teams (50 at full scale); a plain
// go test without BENCH_WORKERS skips it.
func BenchmarkTeamWorkers(b *testing.B) {
	list, teams := os.Getenv("BENCH_WORKERS"), 50
	if list == "" {
		switch os.Getenv("BENCH_SCALE") {
		case "small":
			list, teams = "1,4", 20
		case "full":
			list = "1,4"
		default:
			b.Skip("set BENCH_WORKERS (e.g. 1,4) to compare Team worker counts; see docs/benchmarks.md")
		}
	}
	var workers []int
	for _, f := range strings.Split(list, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || w < 1 {
			b.Fatalf("BENCH_WORKERS=%q: want worker counts like 1,4", list)
		}
		workers = append(workers, w)
	}
	cp := localcp.ForTest(b)
	n := envInt(b, "BENCH_TEAMS", teams)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	dir := b.TempDir()
	bin, err := gpuvcbin.Build(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range workers {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for i := range b.N {
				batch(ctx, b, cp, bin, dir, n, w, fmt.Sprintf("w%d-%d", w, i))
			}
		})
	}
}

func batch(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, bin, dir string, n, workers int, run string) {
	extra := append([]string{"--team-workers", strconv.Itoa(workers)}, strings.Fields(os.Getenv("BENCH_MANAGER_FLAGS"))...)
	m, _, err := startManager(ctx, bin, dir, cp, extra...)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Stop()
	tw, err := watchTeams(ctx, cp.Config, cp.Client)
	if err != nil {
		b.Fatal(err)
	}
	defer tw.stop()
	c, err := client.New(cp.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", run, i)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range names { // 8 clients, like a `gpuvc apply` of a folder
		if i%8 == 0 {
			wg.Add(1)
			go func(part []string) {
				defer wg.Done()
				for _, name := range part {
					errs <- c.Create(ctx, testobj.Team(name, "a100").GPUs(1).Obj())
				}
			}(names[i:min(i+8, n)])
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	created := time.Since(start)
	exported := map[string]bool{}
	poll.UntilSeen(ctx, b, 30*time.Minute, fmt.Sprintf("%d teams Ready", n), func(context.Context) (bool, string, error) {
		ready := 0
		for _, t := range names {
			if _, ok := tw.at(t, gpuvcv1.ConditionVClusterReady); ok && !exported[t] {
				exportKubeconfig(ctx, b, cp, t)
				exported[t] = true
			}
			if _, ok := tw.at(t, gpuvcv1.ConditionReady); ok {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d VClusterReady, %d Ready", len(exported), ready), nil
	})
	vcDone, _ := tw.all(names, gpuvcv1.ConditionVClusterReady)
	readyDone, _ := tw.all(names, gpuvcv1.ConditionReady)
	b.ReportMetric(float64(n), "teams")
	b.ReportMetric(float64(workers), "workers")
	b.ReportMetric(created.Seconds(), "create-s")
	b.ReportMetric(vcDone.Sub(start).Seconds(), "all-vcluster-s")
	b.ReportMetric(readyDone.Sub(start).Seconds(), "all-ready-s")
	m.Stop()
	removeTeams(ctx, b, c, cp, names)
}

// removeTeams deletes the batch without a manager, so the next one starts from
// an empty host: finalizers dropped, namespaces deleted (their Helm release
// Secrets with them), and waits until the namespaces are gone.
func removeTeams(ctx context.Context, b *testing.B, c client.Client, cp *localcluster.ControlPlane, names []string) {
	for _, name := range names {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		t := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Patch(ctx, t, patch); client.IgnoreNotFound(err) != nil {
			b.Fatal(err)
		}
		if err := c.Delete(ctx, t); client.IgnoreNotFound(err) != nil {
			b.Fatal(err)
		}
	}
	poll.UntilSeen(ctx, b, 15*time.Minute, "team namespaces deleted", func(ctx context.Context) (bool, string, error) {
		left := 0
		for _, name := range names {
			_, err := cp.Client.CoreV1().Namespaces().Get(ctx, gpuvcv1.HostNamespace(name), metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d namespaces left", left), nil
	})
}

func envInt(b *testing.B, key string, def int) int {
	s := os.Getenv(key)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive number", key, s)
	}
	return v
}
