package vcmem

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// settle is how long every vCluster runs idle after its check pod is Running
// before it is measured: the API server's and the syncer's start-up garbage is
// collected by then (Go returns freed heap to the OS after minutes, so RSS keeps
// sinking slowly: the figures are a snapshot, not a floor).
const settle = 90 * time.Second

// cpuWindow is how long the idle control planes' CPU time is counted.
const cpuWindow = 60 * time.Second

// BenchmarkVClusterMemory: memory of each team's vCluster control plane on the
// real node, with gpuvc's values (variant default) and trimmed ones (trim.go),
// teamsPerVariant teams each, all running at once.
func BenchmarkVClusterMemory(b *testing.B) {
	if why := realNodeBusy(); why != "" {
		b.Skip(why)
	}
	perVariant := 2
	if os.Getenv("BENCH_SCALE") == "full" {
		perVariant = 4
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	began := time.Now()
	if err := localcp.EnsureAll(ctx, os.Stderr); err != nil {
		b.Fatal(err)
	}
	s := &stack{b: b, ctx: ctx, gpuvc: gpuvcbin.BuildForTest(b, ctx), kubectl: localcp.Kubectl(b), dir: filepath.Join(b.TempDir(), "cluster")}
	s.up()
	s.host("install", "-f", filepath.Join(s.dir, "values.yaml"), "--wait", "--timeout", "5m")
	b.Logf("stack up and gpuvc installed in %v", time.Since(began).Round(time.Second))

	teams := map[string][]string{}
	var manifests []string
	for _, v := range variants {
		for i := 1; i <= perVariant; i++ {
			name := fmt.Sprintf("mem-%s-%d", v.Name, i)
			teams[v.Name] = append(teams[v.Name], name)
			manifests = append(manifests, teamManifest(b, name, v.Values))
		}
	}
	file := filepath.Join(b.TempDir(), "teams.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(manifests, "---\n")), 0o644); err != nil {
		b.Fatal(err)
	}
	created := time.Now()
	s.host("team", "apply", "-f", file, "--wait", "--timeout", "15m")
	b.Logf("%d teams Ready in %v", len(manifests), time.Since(created).Round(time.Second))

	// Every team's features still work: a pod created through the team's own
	// kubeconfig is synced to the host and runs on the real node.
	for _, v := range variants {
		for _, team := range teams[v.Name] {
			s.checkPodRuns(team)
		}
	}
	b.Logf("settling %v", settle)
	time.Sleep(settle)

	client := s.hostClient()
	first := map[string]PodMemory{}
	for _, v := range variants {
		for _, team := range teams[v.Name] {
			first[team] = s.teamMemory(client, team, true)
		}
	}
	// CPU of the idle control planes over a window: what the trims cost.
	start := time.Now()
	time.Sleep(cpuWindow)
	mean := map[string]float64{}
	for _, v := range variants {
		var rss, anon, ws, cpu float64
		parts := map[string]float64{}
		for _, team := range teams[v.Name] {
			m := first[team]
			rss += mib(m.TotalRSS())
			anon += mib(m.TotalAnon())
			ws += mib(m.TotalWorkingSet())
			for name, n := range m.RSS {
				parts[component(name)] += mib(n)
			}
			later := s.teamMemory(client, team, false)
			cpu += float64(later.CPUTicks-m.CPUTicks) / 100 / time.Since(start).Seconds() * 100
		}
		n := float64(len(teams[v.Name]))
		mean[v.Name] = rss / n
		b.ReportMetric(rss/n, v.Name+"-MiB/team")
		b.ReportMetric(anon/n, v.Name+"-anon-MiB/team")
		b.ReportMetric(ws/n, v.Name+"-ws-MiB/team")
		b.ReportMetric(cpu/n, v.Name+"-cpu-%/team")
		for c, sum := range parts {
			b.ReportMetric(sum/n, v.Name+"-"+c+"-MiB/team")
		}
		mean[v.Name+"-anon"] = anon / n
		mean[v.Name+"-ws"] = ws / n
	}
	for _, v := range variants[1:] {
		b.ReportMetric(mean[v.Name]/mean["default"], v.Name+"/default")
		b.ReportMetric(mean[v.Name+"-anon"]/mean["default-anon"], v.Name+"-anon/default")
		b.ReportMetric(mean[v.Name+"-ws"]/mean["default-ws"], v.Name+"-ws/default")
	}
	b.ReportMetric(float64(perVariant), "teams/variant")
	b.ReportMetric(time.Since(began).Seconds(), "run-s")
	for range b.N { // one measurement: the setup is the benchmark
	}
}

// realNodeBusy says why the real node cannot run now, or "".
func realNodeBusy() string {
	if testing.Short() {
		return "-short: starts a control plane and a real node (minutes)"
	}
	if os.Geteuid() != 0 {
		return "not root: the real node needs root (containerd, runc, cgroups, iptables); run as root"
	}
	l, err := net.Listen("tcp", ":6443")
	if err != nil {
		return fmt.Sprintf("the machine's real-node slot is busy (port 6443 taken: a trial, `gpuvc dev cluster` or an end-to-end run holds it): %v", err)
	}
	l.Close()
	return ""
}

// stack is `gpuvc dev cluster up` with its real node, run by the gpuvc binary
// as a user would.
type stack struct {
	b                   *testing.B
	ctx                 context.Context
	gpuvc, kubectl, dir string
	kubeconfig          string
}

func (s *stack) up() {
	out, errOut, err := gpuvcbin.Run(s.ctx, s.gpuvc, "dev", "cluster", "up", "--dir", s.dir)
	s.b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, errOut, err := gpuvcbin.Run(ctx, s.gpuvc, "dev", "cluster", "down", "--dir", s.dir); err != nil {
			s.b.Errorf("dev cluster down: %v\n%s", err, errOut)
		}
	})
	if err != nil {
		s.b.Fatalf("dev cluster up: %v\n%s", err, errOut)
	}
	s.kubeconfig = strings.TrimSpace(strings.TrimPrefix(out, "export KUBECONFIG="))
}

func (s *stack) host(args ...string) string {
	s.b.Helper()
	out, errOut, err := gpuvcbin.Run(s.ctx, s.gpuvc, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
	if err != nil {
		s.b.Fatalf("gpuvc %v: %v\n%s\n%s", args, err, out, errOut)
	}
	return out + errOut
}

func (s *stack) hostClient() kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		s.b.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// checkPodRuns creates a pod through the team's kubeconfig and waits until it
// is Ready (synced to the host, running on the real node).
func (s *stack) checkPodRuns(team string) {
	s.b.Helper()
	kc := filepath.Join(s.b.TempDir(), team+".kubeconfig")
	s.host("team", "kubeconfig", team, "-f", kc)
	pod := `apiVersion: v1
kind: Pod
metadata: {name: memcheck, namespace: default}
spec:
  containers:
  - name: main
    image: ` + images.WorkloadRef + `
    command: [sh, -c, "exec sleep 86400"]
    resources:
      requests: {cpu: 10m, memory: 16Mi}
      limits: {memory: 32Mi}
`
	cmd := exec.CommandContext(s.ctx, s.kubectl, "--kubeconfig", kc, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(pod)
	if out, err := cmd.CombinedOutput(); err != nil {
		s.b.Fatalf("team %s: creating a pod: %v\n%s", team, err, out)
	}
	if out, errOut, err := gpuvcbin.Run(s.ctx, s.kubectl, "--kubeconfig", kc, "wait", "-n", "default", "pod/memcheck",
		"--for=condition=Ready", "--timeout=4m"); err != nil {
		s.b.Fatalf("team %s: the pod does not run (its vCluster does not sync it): %v\n%s%s", team, err, out, errOut)
	}
}

// teamMemory reads the memory of the team's control-plane pods (the vCluster
// pod and the CoreDNS pod it syncs) on the node and logs it per process.
func (s *stack) teamMemory(client kubernetes.Interface, team string, log bool) PodMemory {
	s.b.Helper()
	ns := contract.TeamNamespacePrefix + team
	pods, err := client.CoreV1().Pods(ns).List(s.ctx, metav1.ListOptions{})
	if err != nil {
		s.b.Fatal(err)
	}
	all := PodMemory{RSS: map[string]int64{}, Anon: map[string]int64{}, WorkingSet: map[string]int64{}}
	var lines []string
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, "memcheck-") || p.Status.Phase != corev1.PodRunning {
			continue // the check pod is the team's workload, not its control plane
		}
		m, err := ReadPodMemory(string(p.UID))
		if err != nil {
			s.b.Fatalf("team %s pod %s: %v", team, p.Name, err)
		}
		for name, v := range m.RSS {
			all.RSS[name] += v
		}
		for name, v := range m.Anon {
			all.Anon[name] += v
		}
		all.CPUTicks += m.CPUTicks
		for c, v := range m.WorkingSet {
			all.WorkingSet[p.Name+"/"+c] = v
		}
		lines = append(lines, fmt.Sprintf("%s: RSS %s; anonymous %s; working set %.0f MiB", p.Name, perName(m.RSS), perName(m.Anon), mib(m.TotalWorkingSet())))
	}
	sort.Strings(lines)
	if log {
		s.b.Logf("team %s: RSS %.0f MiB, anonymous %.0f MiB, working set %.0f MiB\n  %s", team,
			mib(all.TotalRSS()), mib(all.TotalAnon()), mib(all.TotalWorkingSet()), strings.Join(lines, "\n  "))
	}
	return all
}

func perName(rss map[string]int64) string {
	names := make([]string, 0, len(rss))
	for n := range rss {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return rss[names[i]] > rss[names[j]] })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.0f", n, mib(rss[n]))
	}
	return strings.Join(parts, ", ") + " MiB"
}

// component names the part of a team's control plane a process is, by its
// name (/proc/<pid>/comm, cut at 15 bytes).
func component(comm string) string {
	switch comm {
	case "vcluster":
		return "syncer" // vCluster itself: the syncer and the supervisor of the others
	case "kine":
		return "kine" // the embedded SQLite datastore behind the API server
	case "kube-apiserver":
		return "apiserver"
	case "kube-controller":
		return "controller-manager"
	case "coredns":
		return "coredns"
	}
	return "other" // the pause containers, shells of the init containers
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// teamManifest is a Team on the system pool (the real node) with these extra
// vCluster values.
func teamManifest(b *testing.B, name string, values map[string]any) string {
	spec := map[string]any{"pool": "system", "quota": map[string]any{"gpus": 1}}
	if values != nil {
		spec["vcluster"] = map[string]any{"values": values}
	}
	j, err := json.Marshal(map[string]any{
		"apiVersion": "gpuvc.dev/v1alpha1", "kind": "Team",
		"metadata": map[string]any{"name": name}, "spec": spec,
	})
	if err != nil {
		b.Fatal(err)
	}
	return string(j) + "\n"
}
