// Package localprom runs a real Prometheus (Debian's prometheus package) beside the
// local cluster: it scrapes gpuvc's manager and the real node's GPU agent and loads
// gpuvc's alert rules (the chart's file). The trial runs it (kind/trial); its e2e
// test queries it for every series and dashboard panel.
//
// Debian builds Prometheus without Kubernetes service discovery
// (kubernetes_sd_configs is refused as an unknown field), so the targets are
// static: the manager's metrics Service by its ClusterIP (which routes from this
// machine to the real node) and the node agent's address. A cluster's Prometheus
// finds the same endpoints by the chart's ServiceMonitor or pod annotations.
package localprom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/kind/supervise"
)

// DefaultListen is where Prometheus serves when that port is free; otherwise a
// free port of the loopback address is taken.
const DefaultListen = "127.0.0.1:9090"

// Options configure Start.
type Options struct {
	// Dir holds the configuration, the rules, the time series and the log. Required.
	Dir string
	// Targets are the host:port endpoints to scrape (/metrics), by job name.
	Targets map[string][]string
	// Rules is a Prometheus rules file (the chart's, charts.PrometheusRules).
	Rules []byte
	// Interval is the scrape and rule evaluation interval; 10 s when zero.
	Interval time.Duration
	// Detached leaves Prometheus running after this program ends (the trial).
	Detached bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Prometheus is a running Prometheus.
type Prometheus struct {
	// URL is its web address, e.g. http://127.0.0.1:9090.
	URL  string
	proc *supervise.Process
}

// Binary is the prometheus executable on PATH, or an error saying how to get it.
func Binary() (string, error) {
	p, err := exec.LookPath("prometheus")
	if err != nil {
		return "", errors.New("prometheus is not installed: install Debian's prometheus package (as root: apt-get install --no-install-recommends prometheus; bash .ci/host-packages does it)")
	}
	return p, nil
}

// Config is the prometheus.yml Start writes: one job per entry of targets, and
// the rules file.
func Config(targets map[string][]string, interval time.Duration) ([]byte, error) {
	iv := interval.String()
	jobs := []any{}
	names := make([]string, 0, len(targets))
	for job := range targets {
		names = append(names, job)
	}
	sort.Strings(names)
	for _, job := range names {
		jobs = append(jobs, map[string]any{"job_name": job, "static_configs": []any{map[string]any{"targets": targets[job]}}})
	}
	return yaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": iv, "evaluation_interval": iv},
		"rule_files":     []string{"rules.yaml"},
		"scrape_configs": jobs,
	})
}

func pidFile(dir string) string { return filepath.Join(dir, "pid") }
func urlFile(dir string) string { return filepath.Join(dir, "url") }

// Start writes the configuration into opts.Dir and starts Prometheus, waiting
// until it answers ready.
func Start(ctx context.Context, opts Options) (*Prometheus, error) {
	if opts.Dir == "" {
		return nil, errors.New("localprom: Options.Dir is required")
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "data"), 0o700); err != nil {
		return nil, err
	}
	cfg, err := Config(opts.Targets, opts.Interval)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, "prometheus.yml"), cfg, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, "rules.yaml"), opts.Rules, 0o600); err != nil {
		return nil, err
	}
	listen, err := listenAddress()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config.file=" + filepath.Join(opts.Dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(opts.Dir, "data"),
		"--web.listen-address=" + listen,
		"--web.enable-lifecycle",
	}
	proc, err := supervise.Start("prometheus", bin, args, nil, opts.Dir, opts.Detached)
	if err != nil {
		return nil, err
	}
	p := &Prometheus{URL: "http://" + listen, proc: proc}
	if err := supervise.WaitHTTP(ctx, "prometheus", []*supervise.Process{proc}, p.URL+"/-/ready"); err != nil {
		return nil, errors.Join(err, proc.Stop(5*time.Second))
	}
	if err := os.WriteFile(pidFile(opts.Dir), []byte(strconv.Itoa(proc.PID())), 0o600); err != nil {
		return nil, errors.Join(err, proc.Stop(5*time.Second))
	}
	if err := os.WriteFile(urlFile(opts.Dir), []byte(p.URL), 0o600); err != nil {
		return nil, errors.Join(err, proc.Stop(5*time.Second))
	}
	fmt.Fprintf(log, "localprom: Prometheus %s serving at %s (config %s)\n", version(ctx, bin), p.URL, filepath.Join(opts.Dir, "prometheus.yml"))
	return p, nil
}

// Stop ends a Prometheus this program started.
func (p *Prometheus) Stop() error { return p.proc.Stop(10 * time.Second) }

// Running returns the URL of the Prometheus Start left running in dir, or "".
func Running(dir string) string {
	pid, err := readPID(dir)
	if err != nil || !supervise.Alive(pid) {
		return ""
	}
	b, err := os.ReadFile(urlFile(dir))
	if err != nil {
		return ""
	}
	return string(b)
}

// StopDetached stops the Prometheus Start left running in dir; none: nothing to do.
func StopDetached(dir string) error {
	pid, err := readPID(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return supervise.StopPID(pid, 10*time.Second)
}

func readPID(dir string) (int, error) {
	b, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", pidFile(dir), err)
	}
	return pid, nil
}

// listenAddress is DefaultListen when its port is free, else a free loopback port.
func listenAddress() (string, error) {
	for _, addr := range []string{DefaultListen, "127.0.0.1:0"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		a := l.Addr().String()
		l.Close()
		return a, nil
	}
	return "", errors.New("no free port on 127.0.0.1 for Prometheus")
}

func version(ctx context.Context, bin string) string {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return "(version unknown)"
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if f := strings.Fields(first); len(f) >= 3 {
		return f[2]
	}
	return strings.TrimSpace(first)
}

// Sample is one series of an instant query's answer: its labels and value.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query runs an instant PromQL query at Prometheus' base URL: the vector's
// series, or one unlabelled sample for a scalar. A query Prometheus cannot
// parse or run is an error naming it.
func Query(ctx context.Context, baseURL, promql string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/api/v1/query?query="+url.QueryEscape(promql), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: reading the answer (%s): %w", promql, resp.Status, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", promql, resp.Status, body.Error)
	}
	switch body.Data.ResultType {
	case "vector":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(body.Data.Result, &series); err != nil {
			return nil, err
		}
		out := make([]Sample, 0, len(series))
		for _, s := range series {
			v, err := value(s.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, Sample{Metric: s.Metric, Value: v})
		}
		return out, nil
	case "scalar":
		var pair [2]any
		if err := json.Unmarshal(body.Data.Result, &pair); err != nil {
			return nil, err
		}
		v, err := value(pair)
		return []Sample{{Value: v}}, err
	}
	return nil, fmt.Errorf("query %q: unexpected result type %q", promql, body.Data.ResultType)
}

// value reads Prometheus' [timestamp, "value"] pair.
func value(pair [2]any) (float64, error) {
	s, ok := pair[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", pair[1])
	}
	return strconv.ParseFloat(s, 64)
}
