package scale

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/teamctl"
	"github.com/gpuvc/gpuvc/syncer/queued"
)

// size is one BENCH_SCALE.
type size struct {
	cold, sequential, pods int
	nodes                  int // a100 nodes: room for every pod that may run
}

// sizes: the default fits `make bench` on 2 cores; full is issue #16/#17's
// 100 teams and 10,000 pods; large is a point beyond, to show how memory grows.
var sizes = map[string]size{
	"small": {cold: 10, sequential: 20, pods: 1000, nodes: 4},
	"full":  {cold: 80, sequential: 20, pods: 10000, nodes: 24},
	"large": {cold: 180, sequential: 20, pods: 20000, nodes: 48},
}

// sizeOf is the size named by BENCH_SCALE ("" is small).
func sizeOf(name string) (size, error) {
	if name == "" {
		name = "small"
	}
	sz, ok := sizes[name]
	if !ok {
		return sizes["small"], fmt.Errorf("BENCH_SCALE=%q: want small, full or large", name)
	}
	return sz, nil
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
// created while no manager ran (process start → all VClusterReady); a mix of
// GPU pods spread over every team by 16 clients — whole GPUs, MIG slices and
// fractions (served by reservations), every other team queueing its GPU pods in
// Kueue beyond a small guarantee; the manager at rest with all of it (RSS, heap,
// CPU, the API requests it makes per minute); a restart with all of it in
// place (process start → every Team reconciled, queue empty). RSS and CPU of
// the process are read from /proc after each step. BENCH_GPUVC_BIN runs a
// prebuilt gpuvc instead of building this tree's (to compare two builds).
func BenchmarkScale(b *testing.B) {
	cp := localcp.ForTest(b)
	sz, err := sizeOf(os.Getenv("BENCH_SCALE"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	dir := b.TempDir()
	bin := os.Getenv("BENCH_GPUVC_BIN")
	if bin == "" {
		if bin, err = gpuvcbin.Build(ctx, dir); err != nil {
			b.Fatal(err)
		}
	}
	for i := range b.N {
		scenario(ctx, b, cp, bin, dir, sz, fmt.Sprint(i))
	}
}

func scenario(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, bin, dir string, sz size, run string) {
	perTeam := (sz.pods + sz.cold + sz.sequential - 1) / (sz.cold + sz.sequential)
	// 1. The idle manager: no team. It installs the Team CRD.
	m, idleStart, err := startManager(ctx, bin, dir, cp)
	if err != nil {
		b.Fatal(err)
	}
	idle := measure(ctx, b, m, settle, "idle")
	teams, tw := teamsAndWatch(ctx, b, cp)
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
	queueing := map[string]bool{}
	for i := range sz.sequential {
		t := fmt.Sprintf("seq-%s-%d", run, i)
		queueing[t] = len(all)%2 == 1
		start := time.Now()
		if err := teams.Create(ctx, mixTeam(t, queueing[t], perTeam)); err != nil {
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
		queueing[t] = (len(all)+len(cold))%2 == 1
		if err := teams.Create(ctx, mixTeam(t, queueing[t], perTeam)); err != nil {
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
	withTeams := measure(ctx, b, m, settle, "teams")

	// 5. The pod mix over every team, through the webhook, until every pod runs
	// or waits in Kueue.
	podStart := time.Now()
	kinds := createPods(ctx, b, cp.Config, all, sz.pods)
	podRate := float64(sz.pods) / time.Since(podStart).Seconds()
	waiting := waitSettled(ctx, b, cp, queueing, sz.pods)
	afterPods := measure(ctx, b, m, 0, "")
	withPods := measure(ctx, b, m, settleLong, "pods")

	// The same window with no manager: what the rest of the host asks of the
	// API server (kwok's nodes, Kueue, the controller manager), so that the
	// difference is the manager's, per verb and resource.
	m.Stop()
	without := apiserverWindow(ctx, b, cp, settleLong)
	ours := attribute(withPods, without)

	// 6. Restart with everything in place: process start → every Team
	// reconciled once and the queue empty.
	restartAt := time.Now()
	m, _, err = startManager(ctx, bin, dir, cp)
	if err != nil {
		b.Fatal(err)
	}
	profiled := m.profileCPU(ctx, "restart", 20*time.Second)
	poll.UntilSeen(ctx, b, 30*time.Minute, fmt.Sprintf("%d teams reconciled after a restart", len(all)), func(ctx context.Context) (bool, string, error) {
		n, depth, err := m.teamQueue(ctx)
		return n >= float64(len(all)) && depth == 0, fmt.Sprintf("%.0f reconciles, %.0f queued", n, depth), err
	})
	restartTook := time.Since(restartAt)
	profiled()

	nTeams, nPods := float64(len(all)), float64(sz.pods)
	b.ReportMetric(nTeams, "teams")
	b.ReportMetric(nPods, "pods")
	for _, k := range podKinds {
		b.ReportMetric(float64(kinds[k]), "pods-"+k)
	}
	b.ReportMetric(float64(waiting.pods), "pods-waiting-in-kueue")
	b.ReportMetric(float64(waiting.workloads), "kueue-workloads")
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
	b.ReportMetric(mib(idle.end.AnonKiB), "rss-anon-idle-MiB")
	b.ReportMetric(mib(withPods.end.AnonKiB), "rss-anon-pods-MiB")
	b.ReportMetric((mib(withTeams.end.RSSKiB)-mib(idle.end.RSSKiB))/nTeams, "MiB/team")
	b.ReportMetric(float64(withPods.end.RSSKiB-withTeams.end.RSSKiB)/nPods, "KiB/pod")
	b.ReportMetric(idle.heapMiB, "heap-idle-MiB")
	b.ReportMetric(withTeams.heapMiB, "heap-teams-MiB")
	b.ReportMetric(withPods.heapMiB, "heap-pods-MiB")
	b.ReportMetric((withTeams.heapMiB-idle.heapMiB)/nTeams, "heap-MiB/team")
	b.ReportMetric((withPods.heapMiB-withTeams.heapMiB)*1024/nPods, "heap-KiB/pod")
	b.ReportMetric(podRate, "pods-created/s")
	b.ReportMetric((afterPods.end.CPU - withTeams.end.CPU).Seconds(), "cpu-s-pods")
	b.ReportMetric(idle.cpuPercent(), "cpu-idle-%")
	b.ReportMetric(withTeams.cpuPercent(), "cpu-teams-%")
	b.ReportMetric(withPods.cpuPercent(), "cpu-pods-%")
	b.ReportMetric(idle.requestsPerMinute(""), "rest-idle-requests/min")
	b.ReportMetric(withTeams.requestsPerMinute(""), "rest-teams-requests/min")
	b.ReportMetric(withPods.requestsPerMinute(""), "rest-requests/min")
	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		b.ReportMetric(withPods.requestsPerMinute(method), "rest-"+method+"/min")
	}
	b.ReportMetric(withPods.apiserverPerMinute(), "apiserver-requests/min")
	for _, verb := range []string{"GET", "LIST", "WATCH", "CREATE", "UPDATE", "PATCH", "APPLY", "DELETE"} {
		b.ReportMetric(ours.byVerb[verb], "api-"+verb+"/min")
	}
	b.Logf("the manager's API requests per minute at rest, by the API server's counts with and without it: %s", ours)
	b.ReportMetric(idle.liveMiB, "live-heap-idle-MiB")
	b.ReportMetric(withTeams.liveMiB, "live-heap-teams-MiB")
	b.ReportMetric(withPods.liveMiB, "live-heap-pods-MiB")
	b.ReportMetric((withTeams.liveMiB-idle.liveMiB)*1024/nTeams, "live-KiB/team")
	b.ReportMetric((withPods.liveMiB-withTeams.liveMiB)*1024*1024/nPods, "live-B/pod")
}

// attribution is the manager's share of the API server's requests per minute.
type attribution struct {
	byVerb map[string]float64
	top    []string // "VERB resource: n/min", most first
}

func (a attribution) String() string { return strings.Join(a.top, ", ") }

// attribute subtracts the rate of requests without the manager from the rate
// with it, per verb and resource.
func attribute(with, without window) attribution {
	a := attribution{byVerb: map[string]float64{}}
	rates := map[string]float64{}
	for k, v := range with.apiserverBy {
		rates[k] += v / with.took.Minutes()
	}
	for k, v := range without.apiserverBy {
		rates[k] -= v / without.took.Minutes()
	}
	keys := make([]string, 0, len(rates))
	for k, v := range rates {
		verb, _, _ := strings.Cut(k, " ") // WATCH: watches started (each is one long request)
		a.byVerb[verb] += v
		keys = append(keys, k)
	}
	for verb, v := range a.byVerb {
		a.byVerb[verb] = max(v, 0) // the other clients' own variation can exceed a small share
	}
	sort.Slice(keys, func(i, j int) bool { return rates[keys[i]] > rates[keys[j]] })
	for _, k := range keys {
		if rates[k] >= 1 && len(a.top) < 12 {
			a.top = append(a.top, fmt.Sprintf("%s: %.0f", k, rates[k]))
		}
	}
	return a
}

// apiserverWindow counts the API server's requests over d.
func apiserverWindow(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, d time.Duration) window {
	costs := &bench.Costs{Metrics: cp.Client}
	s0, err := costs.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(d) // a measurement window, not a wait for a condition
	s1, err := costs.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	delta := s1.Since(s0)
	return window{took: time.Since(t0), apiserver: delta.Requests, apiserverBy: delta.RequestsBy}
}

// exportKubeconfig stands in for the team's vCluster, which exports its
// kubeconfig once its control plane runs: on kwok nodes none runs, and a Team
// that never gets one stays not Ready and is reconciled again and again.
func exportKubeconfig(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, team string) {
	if err := managertest.ExportKubeconfig(ctx, cp.Client, team); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
}

// teamsAndWatch returns the client that creates Teams as `gpuvc team create`
// does, and a watch of their conditions (stop it when done).
func teamsAndWatch(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane) (*teamctl.Client, *teamWatch) {
	teams, err := teamctl.New(cp.Config)
	if err != nil {
		b.Fatal(err)
	}
	tw, err := watchTeams(ctx, cp.Config, cp.Client)
	if err != nil {
		b.Fatal(err)
	}
	return teams, tw
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

// window is a process's usage over a measured interval, with what it asked
// of the API server meanwhile.
type window struct {
	start, end usage
	took       time.Duration
	// heapMiB is the Go heap in use at the end (go_memstats_heap_inuse_bytes):
	// RSS less what the runtime holds but does not use.
	heapMiB float64
	// requests is the manager's API requests over the window by HTTP method
	// (client-go's rest_client_requests_total); apiserver all clients' requests
	// as the API server counts them (apiserver_request_total).
	requests    map[string]float64
	apiserver   float64
	apiserverBy map[string]float64 // by "VERB resource"
	// liveMiB is the Go heap just after a collection (0 without pprof).
	liveMiB float64
}

func (w window) cpuPercent() float64 {
	if w.took == 0 {
		return 0
	}
	return 100 * (w.end.CPU - w.start.CPU).Seconds() / w.took.Seconds()
}

// requestsPerMinute is the manager's rate of API requests of method ("" all).
func (w window) requestsPerMinute(method string) float64 {
	if w.took == 0 {
		return 0
	}
	n := 0.0
	for m, v := range w.requests {
		if method == "" || m == method {
			n += v
		}
	}
	return n / w.took.Minutes()
}

func (w window) apiserverPerMinute() float64 {
	if w.took == 0 {
		return 0
	}
	return w.apiserver / w.took.Minutes()
}

// measure reads the process's usage now and after d: the steady state once
// the work that led here has settled.
func measure(ctx context.Context, b *testing.B, m *managerProcess, d time.Duration, name string) window {
	costs := &bench.Costs{Metrics: m.cp.Client}
	start, err := m.usage()
	if err != nil {
		b.Fatalf("the manager is gone: %v\n%s", err, logTail(m.dir))
	}
	req0, _, err := m.metrics(ctx)
	if err != nil {
		b.Fatal(err)
	}
	api0, err := costs.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(d) // a measurement window, not a wait for a condition
	end, err := m.usage()
	if err != nil {
		b.Fatalf("the manager is gone: %v\n%s", err, logTail(m.dir))
	}
	req1, heap, err := m.metrics(ctx)
	if err != nil {
		b.Fatal(err)
	}
	api1, err := costs.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	delta := api1.Since(api0)
	w := window{start: start, end: end, took: time.Since(t0), heapMiB: heap / (1 << 20), requests: map[string]float64{},
		apiserver: delta.Requests, apiserverBy: delta.RequestsBy}
	for k, v := range req1 {
		w.requests[k] = v - req0[k]
	}
	if name != "" {
		live, err := m.liveHeap(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		w.liveMiB = live / (1 << 20)
	}
	b.Logf("manager: RSS %.0f MiB (anonymous %.0f, peak %.0f), heap in use %.0f MiB, live %.1f MiB, CPU %.1f s total, %.1f%% over %v, %.0f API requests/min (load %.1f)",
		mib(end.RSSKiB), mib(end.AnonKiB), mib(end.PeakRSSKiB), w.heapMiB, w.liveMiB, end.CPU.Seconds(), w.cpuPercent(), d, w.requestsPerMinute(""), bench.LoadAverage())
	return w
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// The pod mix: whole GPUs, MIG slices and fractions, in turn per team.
const migProfile = "1g.10gb"

var podKinds = []string{"whole", "mig", "fraction"}

// fraction is what a fractional pod asks: four share one GPU's reservation.
const fraction = "0.25"

// mixTeam is a team of the pod mix: room for its share of perTeam pods
// (whole GPUs, MIG slices, fractions and their reservations), or, queueing,
// a guarantee of 2 GPUs and 2 slices with the rest of its pods waiting in
// Kueue (maxQueued room for all of them).
func mixTeam(name string, queueing bool, perTeam int) *gpuvcv1.Team {
	third := int32((perTeam + len(podKinds) - 1) / len(podKinds))
	gpus := third + (third+3)/4 + 2 // whole GPUs, the fractions' reservations, slack
	w := testobj.Team(name, "a100").Fractions().MaxGPUsPerPod(1)
	if !queueing {
		return w.GPUs(gpus).MIG(migProfile, third).Obj()
	}
	t := w.GPUs(2).MIG(migProfile, 2).Obj()
	t.Spec.Queueing = &gpuvcv1.Queueing{MaxQueued: &gpuvcv1.GPUAmount{GPUs: &gpus, MIG: map[string]int32{migProfile: third}}}
	return t
}

// createPods creates n pods of the mix round-robin over the teams' namespaces
// from 16 clients with their own connections and no client-side rate limit; it
// returns how many of each kind.
func createPods(ctx context.Context, b *testing.B, cfg *rest.Config, teams []string, n int) map[string]int {
	const clients = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	kinds := map[string]int{}
	for i := range n {
		kinds[podKinds[(i/len(teams))%len(podKinds)]]++
	}
	for range clients {
		c := unlimited(b, cfg)
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				ns := gpuvcv1.HostNamespace(teams[i%len(teams)])
				p := testobj.Pod(fmt.Sprintf("scale-%d", i), ns).Label(podLabel, "true")
				switch podKinds[(i/len(teams))%len(podKinds)] {
				case "whole":
					p.GPUs("1")
				case "mig":
					p.MIG(migProfile, "1")
				case "fraction":
					p.GPUFraction(fraction)
				}
				if _, err := c.CoreV1().Pods(ns).Create(ctx, p.Obj(), metav1.CreateOptions{}); err != nil {
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
	return kinds
}

// settled is the pod mix once nothing more happens to it: every pod of a team
// that does not queue scheduled (fractions once their reservation holds a GPU),
// every other waiting in Kueue with a Workload.
type settled struct{ pods, workloads int }

// waitSettled waits until the mix has settled.
func waitSettled(ctx context.Context, b *testing.B, cp *localcluster.ControlPlane, queueing map[string]bool, n int) settled {
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		b.Fatal(err)
	}
	workloads := queued.WorkloadKind.GroupVersion().WithResource("workloads")
	var s settled
	poll.UntilSeenEvery(ctx, b, 5*time.Second, 30*time.Minute, fmt.Sprintf("%d pods scheduled or waiting in Kueue", n), func(ctx context.Context) (bool, string, error) {
		l, err := cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: podLabel, FieldSelector: "spec.nodeName="})
		if err != nil {
			return false, "", err
		}
		unscheduled, waiting := 0, 0
		for _, p := range l.Items {
			team, _ := strings.CutPrefix(p.Namespace, gpuvcv1.HostNamespace(""))
			if queueing[team] && len(p.Spec.SchedulingGates) > 0 {
				waiting++
				continue
			}
			unscheduled++
		}
		wls, err := dyn.Resource(workloads).Namespace("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		queuedPods, err := cp.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: contract.LabelKueueQueueName, ResourceVersion: "0"})
		if err != nil {
			return false, "", err
		}
		// Kueue looks at each Workload in turn: until it has said whether it
		// admits it (QuotaReserved), it keeps writing Workloads and ClusterQueues,
		// and the host is not at rest.
		unjudged := 0
		for _, wl := range wls.Items {
			conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
			if !slices.ContainsFunc(conds, func(c any) bool { m, _ := c.(map[string]any); return m["type"] == "QuotaReserved" }) {
				unjudged++
			}
		}
		s = settled{pods: waiting, workloads: len(wls.Items)}
		return unscheduled == 0 && len(wls.Items) >= len(queuedPods.Items) && unjudged == 0,
			fmt.Sprintf("%d unscheduled, %d waiting in Kueue, %d Workloads for %d queued pods, %d not yet judged by Kueue",
				unscheduled, waiting, len(wls.Items), len(queuedPods.Items), unjudged), nil
	})
	return s
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
