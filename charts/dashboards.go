package charts

import (
	"encoding/json"
	"fmt"
	"sort"
)

// dashboardsDir is the folder, inside the chart, of its Grafana dashboards.
const dashboardsDir = ChartDir + "/files/dashboards"

// Panel is one panel of the chart's Grafana dashboards: where it is and the
// PromQL it runs (with Grafana's variables: $pool, $team, $__rate_interval,
// $__range).
type Panel struct {
	Dashboard, Title string
	Exprs            []string
}

// DashboardPanels reads every panel of the chart's dashboards, in file order.
func DashboardPanels() ([]Panel, error) {
	entries, err := chartFiles.ReadDir(dashboardsDir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var out []Panel
	for _, name := range names {
		b, err := chartFiles.ReadFile(dashboardsDir + "/" + name)
		if err != nil {
			return nil, err
		}
		var d struct {
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", name, err)
		}
		for _, p := range d.Panels {
			pl := Panel{Dashboard: d.UID, Title: p.Title}
			for _, t := range p.Targets {
				pl.Exprs = append(pl.Exprs, t.Expr)
			}
			out = append(out, pl)
		}
	}
	return out, nil
}
