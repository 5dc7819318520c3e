package accounting

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// BenchmarkSample measures the accountant's own work per sample at 100 teams and
// 10,000 bound pods: weighing every pod, integrating and encoding every ledger
// (a week of hourly buckets each). Per sample it also makes one uncached pod
// list and one ConfigMap patch per team; those cost API-server time, not the
// manager's CPU, and are not in this number.
func BenchmarkSample(b *testing.B) {
	const teams, podsPerTeam = 100, 100
	nodes := map[string]NodeInfo{}
	for n := range 40 {
		nodes[fmt.Sprintf("node-%d", n)] = NodeInfo{Pool: "a100", Product: "NVIDIA-A100-SXM4-80GB"}
	}
	pods := make([][]corev1.Pod, teams)
	ledgers := make([]*Ledger, teams)
	start := time.Date(2026, 11, 18, 0, 0, 0, 0, time.UTC)
	for t := range teams {
		for i := range podsPerTeam {
			node := fmt.Sprintf("node-%d", (t*podsPerTeam+i)%40)
			var p *testobj.PodWrapper
			switch i % 4 {
			case 0:
				p = bound(testobj.Pod(fmt.Sprintf("w%d", i), "team").GPUs("1"), node)
			case 1:
				p = bound(testobj.Pod(fmt.Sprintf("m%d", i), "team").MIG("1g.10gb", "1"), node)
			case 2:
				p = reservation(fmt.Sprintf("r%d", i), node)
			default:
				p = sharePod(fmt.Sprintf("s%d", i), fmt.Sprintf("r%d", i-1), "2500", node)
			}
			pods[t] = append(pods[t], *p.Obj())
		}
		// A week of history: 168 hourly buckets of four kinds.
		l := NewLedger(start)
		l.Advance(start, TeamRates(pods[t], nodes, "a100"))
		l.Advance(start.Add(7*24*time.Hour), TeamRates(pods[t], nodes, "a100"))
		ledgers[t] = l
	}
	now := start.Add(7 * 24 * time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		now = now.Add(time.Minute)
		for t := range teams {
			ledgers[t].Advance(now, TeamRates(pods[t], nodes, "a100"))
			ledgers[t].Prune(now, 7*24*time.Hour)
			if _, err := json.Marshal(ledgers[t]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(teams), "teams")
	b.ReportMetric(float64(teams*podsPerTeam), "pods")
	perSample := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(perSample*1000, "ms/sample")
	// The manager samples once per Interval (default 1 minute): the share of
	// one core the accountant's own work takes.
	b.ReportMetric(100*perSample/Options{}.withDefaults().Interval.Seconds(), "cpu-%-of-interval")
}
