package trial

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
)

// TestDockerlessTrial runs `make trial`'s Docker-less path and checks what a new
// user sees: the report (every demo pod Running on the real node with a simulated
// device), each team's kubeconfig file listing its pods Running with kubectl, and
// after `trial down` no process, node record, bridge, rule or folder left.
func TestDockerlessTrial(t *testing.T) {
	ctx, gpuvc := prepare(t, "the Docker-less trial needs root (containerd, runc, cgroups, iptables); run as root")
	dir := filepath.Join(t.TempDir(), "trial")

	out, errOut, err := gpuvcbin.Run(ctx, gpuvc, "dev", "trial", "up", "--local", "--dir", dir, "--timeout", "5m")
	t.Cleanup(func() { down(t, gpuvc, dir) })
	if err != nil {
		t.Fatalf("trial up: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("report:\n%s", out)

	if !strings.Contains(out, "gpuvc trial is up on the local cluster") {
		t.Errorf("report does not say where the trial runs:\n%s", out)
	}
	for _, row := range []string{
		`vision\s+train\s+nvidia\.com/gpu: 1\s+team-vision/train-x-default-x-vision\s+system-0\s+nvidia\.com/gpu: 1\s+GPU-sim-`,
		`vision\s+notebook\s+nvidia\.com/mig-1g\.10gb: 1\s+team-vision/notebook-x-default-x-vision\s+system-0\s+nvidia\.com/mig-1g\.10gb: 1\s+MIG-sim-`,
		`vision\s+half\s+gpu-fraction: 0\.5\s+team-vision/half-x-default-x-vision\s+system-0\s+0\.5 of a GPU the team reserved\s+GPU-sim-`,
		`llm\s+train\s+nvidia\.com/gpu: 1\s+team-llm/train-x-default-x-llm\s+system-0\s+nvidia\.com/gpu: 1\s+GPU-sim-`,
		`llm\s+half\s+gpu-fraction: 0\.5\s+team-llm/half-x-default-x-llm\s+system-0\s+0\.5 of a GPU the team reserved\s+GPU-sim-`,
		// The DRA team's pod: its claim from the template, the device the
		// scheduler allocated from the real node's slice, and the UUID the
		// driver's CDI spec handed the container.
		`infer\s+claim\s+resourceClaimTemplate: one-gpu\s+team-infer/claim-x-default-x-infer\s+system-0\s+DRA gpu\.nvidia\.com: gpu-[678]\s+GPU-sim-`,
		`system-0\s+system\s+nvidia\.com/gpu: 4, nvidia\.com/mig-1g\.10gb: 4`,
	} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("report lacks a row matching %s", row)
		}
	}

	for team := range localDemoPods {
		if file := filepath.Join(dir, team+".kubeconfig"); !strings.Contains(out, "already written to "+file) {
			t.Errorf("report does not point at %s", file)
		}
	}
	demoPodsRun(ctx, t, dir, localDemoPods)
	trialPrometheusHasGpuvc(ctx, t, out)
}

// demoPods are the pods the trial runs in each team.
var demoPods = map[string][]string{"vision": {"train", "notebook", "half"}, "llm": {"train", "half"}}

// localDemoPods are the Docker-less trial's: demoPods and the DRA team's pod
// (only the real node runs a DRA driver).
var localDemoPods = map[string][]string{"vision": {"train", "notebook", "half"}, "llm": {"train", "half"}, "infer": {"claim"}}

// demoPodsRun checks, with kubectl and each team's kubeconfig file in dir,
// that every demo pod is Running.
func demoPodsRun(ctx context.Context, t *testing.T, dir string, demoPods map[string][]string) {
	t.Helper()
	kubectl := localcp.Kubectl(t)
	for team, pods := range demoPods {
		file := filepath.Join(dir, team+".kubeconfig")
		got, errOut, err := gpuvcbin.Run(ctx, kubectl, "--kubeconfig", file, "get", "pods", "-A", "--no-headers")
		if err != nil {
			t.Errorf("kubectl --kubeconfig %s get pods -A: %v\n%s", file, err, errOut)
			continue
		}
		for _, p := range pods {
			if !regexp.MustCompile(`(?m)^default\s+` + p + `\s+1/1\s+Running\s`).MatchString(got) {
				t.Errorf("team %s: pod %s is not Running through its kubeconfig:\n%s", team, p, got)
			}
		}
	}
}

// prepare skips where a real node cannot start (under -short; without root,
// saying notRoot), builds (once, cached) the binaries as `make binaries` does
// and the gpuvc binary as `make build` does.
func prepare(t *testing.T, notRoot string) (context.Context, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end to end: starts a control plane and a real node (minutes)")
	}
	if os.Geteuid() != 0 {
		t.Skip(notRoot)
	}
	if l, err := net.Listen("tcp", ":6443"); err != nil {
		busy := "port 6443 is taken (a trial or another cluster with a real node runs here; `make trial-down` removes a trial): %v"
		if os.Getenv("GPUVC_REQUIRE_TRIAL") != "" { // make test: a skip would hide the trial
			t.Fatalf(busy, err)
		}
		t.Skipf(busy, err)
	} else {
		l.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	t.Cleanup(cancel)
	if err := localcp.EnsureAll(ctx, os.Stderr); err != nil {
		t.Fatal(err)
	}
	return ctx, gpuvcbin.BuildForTest(t, ctx)
}

// down runs `gpuvc dev trial down` and checks that nothing is left.
func down(t *testing.T, gpuvc, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, errOut, err := gpuvcbin.Run(ctx, gpuvc, "dev", "trial", "down", "--dir", dir); err != nil {
		t.Errorf("trial down: %v\n%s", err, errOut)
	}
	nothingLeft(t, ctx, dir)
}

// nothingLeft checks that no folder, node record, bridge, process or rule of a
// real node started from dir remains.
func nothingLeft(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("down left %s (%v)", dir, err)
	}
	if _, err := os.Stat("/run/gpuvc-localnode"); !os.IsNotExist(err) {
		t.Errorf("down left the node record /run/gpuvc-localnode (%v)", err)
	}
	if _, err := net.InterfaceByName("gpuvc0"); err == nil {
		t.Error("down left the bridge gpuvc0")
	}
	if left := processesMentioning(dir); len(left) > 0 {
		t.Errorf("down left processes: %v", left)
	}
	if b, err := exec.CommandContext(ctx, "iptables-save").Output(); err == nil {
		for _, chain := range []string{"KUBE-ROUTER", "KUBE-POD-FW", "KUBE-NWPLCY", "KUBE-SERVICES", "GPUVC"} {
			if bytes.Contains(b, []byte(chain)) {
				t.Errorf("down left iptables chains %s*", chain)
			}
		}
	}
}

func processesMentioning(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name()+" "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
