package bench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// The DRA benchmark's team and pool: one kwok node whose 8 GPUs are half
// device-plugin GPUs, half DRA devices (gpuvc's ResourceSlice), so that both
// kinds of pod are scheduled onto the same node by the same scheduler.
const (
	draTeam     = "benchdra"
	draNS       = "team-" + draTeam
	draPool     = "benchdra"
	draNode     = "benchdra-0"
	draTemplate = "one-gpu"
)

// BenchmarkManagerDRAClaimLatency: create → bound for a pod asking one GPU
// through a ResourceClaimTemplate (the resource claim controller makes its
// claim, the scheduler allocates a device of gpuvc's DRA driver before binding)
// against a pod asking nvidia.com/gpu: 1 of the device plugin, interleaved one
// at a time on the same node, both through gpuvc's webhook and CEL fence in a
// spec.dra team's namespace. Each pod is deleted (and its claim gone) before
// the next one, so every sample finds the devices free.
func BenchmarkManagerDRAClaimLatency(b *testing.B) {
	ctx := benchContext(b, 15*time.Minute)
	c := env.cp.Client
	setUpDRATeam(ctx, b)
	bw := bench.WatchBinds(ctx, b, c, draNS)
	defer bw.Stop()
	claimsGone := func(ctx context.Context) (bool, error) {
		l, err := c.ResourceV1().ResourceClaims(draNS).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, nil
	}
	var plugin, claim []time.Duration
	b.ResetTimer()
	for i := range max(b.N, bench.MinLatencySamples/2) {
		plugin = append(plugin, bench.BindLatency(ctx, b, c, bw,
			testobj.Pod(fmt.Sprintf("plugin-%d", i), draNS).GPUs("1").Obj(), nil))
		claim = append(claim, bench.BindLatency(ctx, b, c, bw,
			testobj.Pod(fmt.Sprintf("claim-%d", i), draNS).ResourceClaim("gpu", draTemplate).Obj(), claimsGone))
	}
	b.StopTimer()
	b.ReportMetric(bench.Percentile(claim, 0.5), "claim-p50-ms")
	b.ReportMetric(bench.Percentile(claim, 0.99), "claim-p99-ms")
	b.ReportMetric(bench.Percentile(plugin, 0.5), "plugin-p50-ms")
	b.ReportMetric(bench.Percentile(plugin, 0.99), "plugin-p99-ms")
	b.ReportMetric(float64(len(claim)), "samples")
}

// setUpDRATeam adds the pool's node (its ResourceSlice and gpuvc's
// DeviceClasses come with it), a spec.dra Team provisioned by the manager, and
// the claim template its pods name.
func setUpDRATeam(ctx context.Context, b *testing.B) {
	b.Helper()
	pool := nodepool.Pool{Name: draPool, Taint: true, Nodes: []nodepool.Node{{
		Name: draNode, CPU: "64", Memory: "512Gi", Pods: 110,
		GPU: &nodepool.GPUs{Product: nodepool.ProductA100_80GB, Count: 8, MemoryMiB: 81920, DRA: 4},
	}}}
	if err := env.cp.AddNodes(ctx, []nodepool.Pool{pool}); err != nil {
		b.Fatal(err)
	}
	teams, err := teamctl.New(env.cp.Config)
	if err == nil {
		err = teams.Create(ctx, testobj.Team(draTeam, draPool).GPUs(8).DRA(contract.DeviceClassGPU).Obj())
	}
	if err == nil {
		err = waitVClusterReady(ctx, teams, draTeam)
	}
	if err != nil {
		b.Fatal(err)
	}
	tmpl := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template(draTemplate, draNS)
	if _, err := env.cp.Client.ResourceV1().ResourceClaimTemplates(draNS).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The next benchmarks measure the manager: the team is gone (its
	// namespace emptied, its release uninstalled) before they start.
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := teams.Delete(ctx, draTeam); err != nil {
			b.Errorf("deleting team %s: %v", draTeam, err)
		}
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := env.cp.Client.CoreV1().Namespaces().Get(ctx, draNS, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			b.Errorf("team %s's namespace %s not gone 2 minutes after the team's deletion: %v", draTeam, draNS, err)
		}
		_ = env.cp.Client.CoreV1().Nodes().Delete(ctx, draNode, metav1.DeleteOptions{})
	})
}
