package trial

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/kind/localprom"
)

// trialTeams are the demo teams whose series the trial's Prometheus must hold.
var trialTeams = []string{"llm", "vision"}

// trialSeries are the series the trial's Prometheus must hold: for every
// team-labelled one, for both teams.
var trialSeries = []string{
	`gpuvc_team_gpu_requests`, `gpuvc_team_gpu_quota`, `gpuvc_team_info`, `gpuvc_team_gpu_seconds_total`,
	`gpuvc_share_reservations`, `gpuvc_share_allocated_gpus`, `gpuvc_share_gated_pods`,
	`gpuvc_syncer_admission_requests_total`, `gpuvc_syncer_admission_duration_seconds_bucket`,
	`gpuvc_pool_gpus`, `gpuvc_accounting_last_sample_timestamp_seconds`, `gpuvc_accounting_interval_seconds`,
	`gpuvc_agent_gpu_healthy`,
}

// noDataInTheTrial are the dashboard panels that have nothing to show in the
// trial, and why; every other panel must have data.
var noDataInTheTrial = map[string]string{
	"Queue depth: GPU devices waiting in Kueue": "the trial's teams do not queue (no Kueue)",
	"Kueue standing": "the trial's teams do not queue (no Kueue)",
	// The trial writes no utilization file (gpu/usage.Simulated): its GPUs
	// report memory, not utilization.
	"Utilization of the team's GPUs": "simulated GPUs: no utilization file in the trial",
}

var prometheusURL = regexp.MustCompile(`Prometheus, scraping gpuvc[^\n]*\n\s+(http://[0-9.:]+)/graph`)

// trialPrometheusHasGpuvc queries the trial's real Prometheus (its URL from the
// report): both scrape targets up, every series for both teams, every dashboard
// panel's expression accepted and, but for the panels noDataInTheTrial names,
// answered with data — for each team on the team dashboard.
func trialPrometheusHasGpuvc(ctx context.Context, t *testing.T, report string) {
	t.Helper()
	m := prometheusURL.FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("the report names no Prometheus URL:\n%s", report)
	}
	url := m[1]
	query := func(q string) ([]localprom.Sample, error) { return localprom.Query(ctx, url, q) }

	// Series arrive as scrapes and the accounting's minute samples come in.
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, 4*time.Minute, true, func(context.Context) (bool, error) {
		missing = nil
		for _, job := range []string{"gpuvc-manager", "gpuvc-node-agent"} {
			if s, err := query(fmt.Sprintf(`up{job=%q} == 1`, job)); err != nil || len(s) != 1 {
				missing = append(missing, "up{job="+job+"}")
			}
		}
		for _, name := range trialSeries {
			s, err := query(name)
			if err != nil {
				return false, err
			}
			if len(s) == 0 {
				missing = append(missing, name)
				continue
			}
			if _, teamLabelled := s[0].Metric["team"]; !teamLabelled {
				continue
			}
			for _, team := range trialTeams {
				if !hasLabel(s, "team", team) {
					missing = append(missing, name+"{team="+team+"}")
				}
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("Prometheus at %s lacks %v after 4 minutes: %v", url, missing, err)
	}

	panels, err := charts.DashboardPanels()
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) < 10 {
		t.Fatalf("%d dashboard panels read", len(panels))
	}
	// Rates and increases need a few scrapes of a counter: poll until every
	// panel answers as it should, then report what still does not.
	var problems []string
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		problems = panelProblems(query, panels)
		return len(problems) == 0, nil
	})
	for _, p := range problems {
		t.Error(p)
	}
}

// panelProblems runs every panel's queries: each must be accepted, and answer
// with data unless noDataInTheTrial names the panel (then it must not).
func panelProblems(query func(string) ([]localprom.Sample, error), panels []charts.Panel) []string {
	var out []string
	for _, p := range panels {
		teams := []string{""}
		if p.Dashboard == "gpuvc-team" {
			teams = trialTeams
		}
		for _, team := range teams {
			data := false
			for _, e := range p.Exprs {
				s, err := query(panelQuery(e, team))
				if err != nil {
					out = append(out, fmt.Sprintf("%s / %s: Prometheus refuses the panel's query: %v", p.Dashboard, p.Title, err))
					continue
				}
				data = data || len(s) > 0
			}
			why, expectEmpty := noDataInTheTrial[p.Title]
			switch {
			case !data && !expectEmpty:
				out = append(out, fmt.Sprintf("%s / %s (team %q): no data in the trial", p.Dashboard, p.Title, team))
			case data && expectEmpty:
				out = append(out, fmt.Sprintf("%s / %s (team %q): has data although %s: update noDataInTheTrial", p.Dashboard, p.Title, team, why))
			}
		}
	}
	return out
}

// panelQuery fills in a panel's Grafana variables the way Grafana would for
// the trial: all pools, one team, a 1m rate window, a 10m range.
func panelQuery(expr, team string) string {
	return strings.NewReplacer(
		`=~"$pool"`, `=~".*"`, `"$team"`, fmt.Sprintf("%q", team),
		"$__rate_interval", "1m", "$__range", "10m",
	).Replace(expr)
}

func hasLabel(s []localprom.Sample, k, v string) bool {
	for _, x := range s {
		if x.Metric[k] == v {
			return true
		}
	}
	return false
}
