package scale

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// size is one BENCH_SCALE.
type size struct {
	cold, sequential, pods int
}

// sizes: the default fits `make bench` on 2 cores; full is issue #16/#17's
// 100 teams and 10,000 pods.
var sizes = map[string]size{
	"small": {cold: 10, sequential: 20, pods: 1000},
	"full":  {cold: 80, sequential: 20, pods: 10000},
}

// Windows over which steady RSS and CPU are measured: with teams and pods,
// longer than the accounting interval (1 minute), so one sample of every team
// falls in it; before, shorter.
const (
	settle     = 30 * time.Second
	settleLong = 65 * time.Second
)

const podLabel = "gpuvc.bench/scale"

// BenchmarkScale runs `gpuvc manager` as its own process and measures, in one
// pass: the idle manager; plain namespace creation (the baseline of a team's
// first host object); teams created one at a time (create → host objects up to
// RBAC, and → VClusterReady, the vCluster release applied); a cold start with Teams
// created while no manager ran (process start → all VClusterReady); pods
// spread over every team by 16 clients; a restart with all of it in place
// (process start → every Team reconciled, queue empty). RSS and CPU of the process are read
// from /proc after each step.
func BenchmarkScale(b *testing.B) {
	cp := localcp.ForTest(b)
	name := os.Getenv("BENCH_SCALE")
	if name == "" {
		name = "small"
	}
	sz, ok := sizes[name]
	if !ok {
		b.Fatalf("BENCH_SCALE=%q: want small or full", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	dir := b.TempDir()
	bin, err := gpuvcbin.Build(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		scenario(ctx, b, cp, bin, dir, sz, fmt.Sprint(i))
	}
}

func scenario(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, bin, dir string, sz size, run string) {
	// 1. The idle manager: no team. It installs the Team CRD.
	m, idleStart, err := startManager(ctx, bin, dir, cp)
	if err != nil {
		b.Fatal(err)
	}
	idle := measure(b, m, settle)
	teams, err := teamctl.New(cp.Config)
	if err != nil {
		b.Fatal(err)
	}
	tw, err := watchTeams(ctx, cp.Config, cp.Client)
	if err != nil {
		b.Fatal(err)
	}
	defer tw.stop()

	// 2. Baseline: a plain namespace, created and seen by the API server.
	var nsLat []time.Duration
	for i := range sz.sequential {
		start := time.Now()
		if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, testobj.Namespace(fmt.Sprintf("plain-%s-%d", run, i), nil), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		nsLat = append(nsLat, time.Since(start))
	}

	// 3. Teams one at a time, the manager warm.
	var hostLat, releaseLat []time.Duration
	var all []string
	for i := range sz.sequential {
		t := fmt.Sprintf("seq-%s-%d", run, i)
		start := time.Now()
		if err := teams.Create(ctx, testobj.Team(t, "a100").GPUs(1).Obj()); err != nil {
			b.Fatal(err)
		}
		poll.Until(ctx, b, 5*time.Minute, "team "+t+" VClusterReady", func(context.Context) (bool, error) {
			_, ok := tw.at(t, gpuvcv1.ConditionVClusterReady)
			return ok, nil
		})
		h, _ := tw.at(t, hostObjects)
		r, _ := tw.at(t, gpuvcv1.ConditionVClusterReady)
		hostLat, releaseLat = append(hostLat, h.Sub(start)), append(releaseLat, r.Sub(start))
		all = append(all, t)
		exportKubeconfig(ctx, b, cp, t)
	}
	waitReady(ctx, b, tw, all)
	m.Stop()

	// 4. Cold start: Teams applied while no manager runs, then one starts.
	var cold []string
	for i := range sz.cold {
		t := fmt.Sprintf("cold-%s-%d", run, i)
		if err := teams.Create(ctx, testobj.Team(t, "a100").GPUs(1).Obj()); err != nil {
			b.Fatal(err)
		}
		cold = append(cold, t)
	}
	all = append(all, cold...)
	coldStart := time.Now()
	m, _, err = startManager(ctx, bin, dir, cp)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { m.Stop() }()
	var coldDone time.Time
	exported := map[string]bool{}
	poll.Until(ctx, b, 30*time.Minute, fmt.Sprintf("%d cold teams VClusterReady", len(cold)), func(context.Context) (bool, error) {
		for _, t := range cold {
			if _, ok := tw.at(t, gpuvcv1.ConditionVClusterReady); ok && !exported[t] {
				exportKubeconfig(ctx, b, cp, t)
				exported[t] = true
			}
		}
		var ok bool
		coldDone, ok = tw.all(cold, gpuvcv1.ConditionVClusterReady)
		return ok, nil
	})
	coldTook := coldDone.Sub(coldStart)
	waitReady(ctx, b, tw, all)
	withTeams := measure(b, m, settle)

	// 5. Pods over every team, through the webhook, until all are scheduled.
	podStart := time.Now()
	createPods(ctx, b, cp.Config, all, sz.pods)
	podRate := float64(sz.pods) / time.Since(podStart).Seconds()
	poll.UntilSeen(ctx, b, 20*time.Minute, fmt.Sprintf("%d pods scheduled", sz.pods), func(ctx context.Context) (bool, string, error) {
		l, err := cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: podLabel, FieldSelector: "spec.nodeName="})
		if err != nil {
			return false, "", err
		}
		return len(l.Items) == 0, fmt.Sprintf("%d unscheduled", len(l.Items)), nil
	})
	afterPods := measure(b, m, 0)
	withPods := measure(b, m, settleLong)

	// 6. Restart with everything in place: process start → every Team
	// reconciled once and the queue empty.
	m.Stop()
	restartAt := time.Now()
	m, _, err = startManager(ctx, bin, dir, cp)
	if err != nil {
		b.Fatal(err)
	}
	poll.UntilSeen(ctx, b, 30*time.Minute, fmt.Sprintf("%d teams reconciled after a restart", len(all)), func(ctx context.Context) (bool, string, error) {
		n, depth, err := m.teamQueue(ctx)
		return n >= float64(len(all)) && depth == 0, fmt.Sprintf("%.0f reconciles, %.0f queued", n, depth), err
	})
	restartTook := time.Since(restartAt)

	nTeams := float64(len(all))
	b.ReportMetric(nTeams, "teams")
	b.ReportMetric(float64(sz.pods), "pods")
	b.ReportMetric(bench.Percentile(nsLat, 0.5), "ns-p50-ms")
	b.ReportMetric(bench.Percentile(hostLat, 0.5), "host-p50-ms")
	b.ReportMetric(bench.Percentile(hostLat, 0.99), "host-p99-ms")
	b.ReportMetric(bench.Percentile(releaseLat, 0.5), "release-p50-ms")
	b.ReportMetric(bench.Percentile(releaseLat, 0.99), "release-p99-ms")
	b.ReportMetric(idleStart.Seconds(), "idle-start-s")
	b.ReportMetric(float64(len(cold)), "cold-teams")
	b.ReportMetric(coldTook.Seconds(), "cold-start-s")
	b.ReportMetric(float64(len(cold))*bench.Percentile(releaseLat, 0.5)/1000, "cold-serial-s")
	b.ReportMetric(restartTook.Seconds(), "restart-all-s")
	b.ReportMetric(mib(idle.end.RSSKiB), "rss-idle-MiB")
	b.ReportMetric(mib(withTeams.end.RSSKiB), "rss-teams-MiB")
	b.ReportMetric(mib(withPods.end.RSSKiB), "rss-pods-MiB")
	b.ReportMetric(mib(withPods.end.PeakRSSKiB), "peak-rss-MiB")
	b.ReportMetric((mib(withTeams.end.RSSKiB)-mib(idle.end.RSSKiB))/nTeams, "MiB/team")
	b.ReportMetric(float64(withPods.end.RSSKiB-withTeams.end.RSSKiB)/float64(sz.pods), "KiB/pod")
	b.ReportMetric(podRate, "pods-created/s")
	b.ReportMetric((afterPods.end.CPU - withTeams.end.CPU).Seconds(), "cpu-s-pods")
	b.ReportMetric(idle.cpuPercent(), "cpu-idle-%")
	b.ReportMetric(withTeams.cpuPercent(), "cpu-teams-%")
	b.ReportMetric(withPods.cpuPercent(), "cpu-pods-%")
}

// exportKubeconfig stands in for the team's vCluster, which exports its
// kubeconfig once its control plane runs: on kwok nodes none runs, and a Team
// that never gets one stays not Ready and is reconciled again and again.
func exportKubeconfig(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, team string) {
	if err := managertest.ExportKubeconfig(ctx, cp.Client, team); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// waitReady waits until every team is Ready: nothing left for the manager to
// do before the steady state is measured.
func waitReady(ctx context.Context, b *testing.B, tw *teamWatch, teams []string) {
	poll.UntilSeen(ctx, b, 10*time.Minute, fmt.Sprintf("%d teams Ready", len(teams)), func(context.Context) (bool, string, error) {
		n := 0
		for _, t := range teams {
			if _, ok := tw.at(t, gpuvcv1.ConditionReady); ok {
				n++
			}
		}
		return n == len(teams), fmt.Sprintf("%d Ready", n), nil
	})
}

// window is a process's usage over a measured interval.
type window struct {
	start, end usage
	took       time.Duration
}

func (w window) cpuPercent() float64 {
	if w.took == 0 {
		return 0
	}
	return 100 * (w.end.CPU - w.start.CPU).Seconds() / w.took.Seconds()
}

// measure reads the process's usage now and after d: the steady state once
// the work that led here has settled.
func measure(b *testing.B, m *managerProcess, d time.Duration) window {
	start, err := m.usage()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(d) // a measurement window, not a wait for a condition
	end, err := m.usage()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("manager: RSS %.0f MiB (peak %.0f), CPU %.1f s total, %.1f%% over %v", mib(end.RSSKiB), mib(end.PeakRSSKiB), end.CPU.Seconds(),
		window{start, end, time.Since(t0)}.cpuPercent(), d)
	return window{start: start, end: end, took: time.Since(t0)}
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// createPods creates n CPU pods round-robin over the teams' namespaces from 16
// clients with their own connections and no client-side rate limit.
func createPods(ctx context.Context, b *testing.B, cfg *rest.Config, teams []string, n int) {
	const clients = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		c := unlimited(b, cfg)
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				ns := gpuvcv1.HostNamespace(teams[i%len(teams)])
				p := testobj.Pod(fmt.Sprintf("scale-%d", i), ns).Label(podLabel, "true").Obj()
				if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func unlimited(b *testing.B, cfg *rest.Config) kubernetes.Interface {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, 0
	c.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}
