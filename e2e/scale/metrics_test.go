package scale

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
)

// teamQueue reads the manager's metrics endpoint: how many Team reconciles
// have finished (any result) and how many Teams wait in its work queue.
func (m *managerProcess) teamQueue(ctx context.Context) (reconciled, depth float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Metrics, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || !strings.Contains(labels, `controller="team"`) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "controller_runtime_reconcile_total":
			reconciled += v
		case "workqueue_depth":
			depth += v
		}
	}
	return reconciled, depth, sc.Err()
}
