package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// Costs charges a benchmark's work to the processes that did it: CPU time
// (utime+stime from /proc) of the control plane's components and of this
// process (the manager in process, and the benchmark's own clients), and the
// API server's own view of admission (its webhook call durations, flow-control
// waits and request count). On a shared machine wall-clock rates move with the
// other processes' load; CPU seconds per pod move much less, and say which
// process a throughput point is bound by.
type Costs struct {
	// Procs are the processes charged, by name; pid 0 is this process.
	Procs map[string]int
	// Metrics reads the API server's /metrics; nil skips them.
	Metrics kubernetes.Interface
	// Local gathers the metrics of this process (the manager in process: its
	// webhook server's own time per call and the connections it accepted);
	// nil skips them.
	Local prometheus.Gatherer
	// Profile, if set, is called as each measured block starts with the
	// block's name ("throughput-16-on"); what it returns, as the block ends.
	// It profiles whatever it likes (the benchmarks: the API server and this
	// process, once per name).
	Profile func(ctx context.Context, name string) (done func())
}

// CostSnapshot is the counters at one instant.
type CostSnapshot struct {
	at      time.Time
	cpu     map[string]time.Duration
	metrics map[string]*dto.MetricFamily
	local   map[string]*dto.MetricFamily
}

// Snapshot reads every counter now. Processes that are gone read as zero.
func (c *Costs) Snapshot(ctx context.Context) (CostSnapshot, error) {
	s := CostSnapshot{at: time.Now(), cpu: map[string]time.Duration{}}
	if c == nil {
		return s, nil
	}
	for name, pid := range c.Procs {
		if pid == 0 {
			pid = os.Getpid()
		}
		d, err := ProcessCPU(pid)
		if err == nil {
			s.cpu[name] = d
		}
	}
	if c.Metrics != nil {
		raw, err := c.Metrics.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return s, fmt.Errorf("reading the API server's /metrics: %w", err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		if s.metrics, err = p.TextToMetricFamilies(bytes.NewReader(raw)); err != nil {
			return s, fmt.Errorf("parsing the API server's /metrics: %w", err)
		}
	}
	if c.Local != nil {
		fams, err := c.Local.Gather()
		if err != nil {
			return s, fmt.Errorf("gathering this process's metrics: %w", err)
		}
		s.local = map[string]*dto.MetricFamily{}
		for _, f := range fams {
			s.local[f.GetName()] = f
		}
	}
	return s, nil
}

// CostDelta is what happened between two snapshots.
type CostDelta struct {
	Took time.Duration
	// CPU per process over the interval.
	CPU map[string]time.Duration
	// Webhooks: per admission webhook type ("admit" = mutating, "validating"),
	// the API server's calls and their duration histogram over the interval.
	Webhooks map[string]Histogram
	// FlowControlWait: how long requests waited in API Priority and Fairness
	// queues over the interval (all priority levels).
	FlowControlWait Histogram
	// Requests the API server answered over the interval (all clients), and
	// by "VERB resource[/subresource]".
	Requests   float64
	RequestsBy map[string]float64
	// Served: per webhook path of this process's webhook server, the time
	// from its handler entered (headers read) to the answer written
	// (controller_runtime_webhook_latency_seconds): against the API server's
	// time for the same call, what the transport and the waits added.
	Served map[string]Histogram
	// Connections this process's webhook server accepted (TLS handshakes).
	Connections float64
	// Controllers: per controller-runtime controller of this process, its
	// reconciles, their time and the wait of requests in its work queue.
	Controllers map[string]ControllerWork
	// ShareSeenToBound: the share controller's own measure of a share pod's
	// wait, from its watch first delivering the pod to the gate's removal
	// written (gpuvc_share_ungate_latency_seconds).
	ShareSeenToBound Histogram
}

// ControllerWork is what one controller did over an interval.
type ControllerWork struct {
	Reconciles      float64
	Time, QueueWait Histogram
}

// Histogram is a Prometheus histogram's change over an interval.
type Histogram struct {
	Count, Sum float64
	// Buckets: cumulative counts by upper bound, ascending.
	Bounds, Counts []float64
}

// Mean is the mean observation, in the histogram's unit.
func (h Histogram) Mean() float64 {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / h.Count
}

// Quantile estimates the q-quantile by linear interpolation in its bucket, as
// Prometheus's histogram_quantile does.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	lower, below := 0.0, 0.0
	for i, ub := range h.Bounds {
		if h.Counts[i] >= rank {
			if math.IsInf(ub, 1) {
				return lower
			}
			in := h.Counts[i] - below
			if in == 0 {
				return ub
			}
			return lower + (ub-lower)*(rank-below)/in
		}
		lower, below = ub, h.Counts[i]
	}
	return lower
}

// Since is what happened from s0 to s.
func (s CostSnapshot) Since(s0 CostSnapshot) CostDelta {
	d := CostDelta{Took: s.at.Sub(s0.at), CPU: map[string]time.Duration{}, Webhooks: map[string]Histogram{}, Served: map[string]Histogram{}}
	for name, v := range s.cpu {
		d.CPU[name] = v - s0.cpu[name]
	}
	if s.local != nil {
		byPath := func(m *dto.Metric) string { return label(m, "webhook") }
		for path, h := range histogramDelta(s.local, s0.local, "controller_runtime_webhook_latency_seconds", byPath) {
			d.Served[path] = h
		}
		d.Connections = counterDeltaBy(s.local, s0.local, "gpuvc_webhook_connections_total", func(*dto.Metric) string { return "" })[""]
		d.Controllers = map[string]ControllerWork{}
		byController := func(m *dto.Metric) string { return label(m, "controller") }
		for name, n := range counterDeltaBy(s.local, s0.local, "controller_runtime_reconcile_total", byController) {
			w := d.Controllers[name]
			w.Reconciles = n
			d.Controllers[name] = w
		}
		for name, h := range histogramDelta(s.local, s0.local, "controller_runtime_reconcile_time_seconds", byController) {
			w := d.Controllers[name]
			w.Time = h
			d.Controllers[name] = w
		}
		d.ShareSeenToBound = histogramDelta(s.local, s0.local, "gpuvc_share_ungate_latency_seconds", func(*dto.Metric) string { return "" })[""]
		byQueue := func(m *dto.Metric) string { return label(m, "name") }
		for name, h := range histogramDelta(s.local, s0.local, "workqueue_queue_duration_seconds", byQueue) {
			w := d.Controllers[name]
			w.QueueWait = h
			d.Controllers[name] = w
		}
	}
	if s.metrics == nil {
		return d
	}
	byType := func(m *dto.Metric) string { return label(m, "type") }
	for typ, h := range histogramDelta(s.metrics, s0.metrics, "apiserver_admission_webhook_admission_duration_seconds", byType) {
		d.Webhooks[typ] = h
	}
	all := func(*dto.Metric) string { return "" }
	d.FlowControlWait = histogramDelta(s.metrics, s0.metrics, "apiserver_flowcontrol_request_wait_duration_seconds", all)[""]
	d.RequestsBy = counterDeltaBy(s.metrics, s0.metrics, "apiserver_request_total", func(m *dto.Metric) string {
		res := label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			res += "/" + sub
		}
		return label(m, "verb") + " " + res
	})
	for _, v := range d.RequestsBy {
		d.Requests += v
	}
	return d
}

// Report adds the delta's figures per unit of work (pods) to b's metrics,
// prefixed (e.g. "on-").
func (d CostDelta) Report(report func(float64, string), prefix string, pods int) {
	if pods == 0 {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(d.CPU)) {
		report(float64(d.CPU[name].Microseconds())/1000/float64(pods), prefix+name+"-cpu-ms/pod")
	}
	if len(d.Served) > 0 {
		// Calls per pod, also none: the validating webhook's match condition
		// skips routine pods (docs/syncer.md).
		for _, typ := range []string{"admit", "validating"} {
			report(d.Webhooks[typ].Count/float64(pods), prefix+"apiserver-"+typ+"-webhook-calls/pod")
		}
	}
	for _, typ := range slices.Sorted(maps.Keys(d.Webhooks)) {
		h := d.Webhooks[typ]
		if h.Count == 0 {
			continue
		}
		report(h.Mean()*1000, prefix+"apiserver-"+typ+"-webhook-mean-ms")
		report(h.Quantile(0.5)*1000, prefix+"apiserver-"+typ+"-webhook-p50-ms")
	}
	if d.FlowControlWait.Count > 0 {
		report(d.FlowControlWait.Mean()*1000, prefix+"apf-wait-mean-ms")
	}
	if d.Requests > 0 {
		report(d.Requests/float64(pods), prefix+"apiserver-requests/pod")
		events := 0.0
		for key, v := range d.RequestsBy {
			if strings.HasSuffix(key, " events") {
				events += v
			}
		}
		report(events/float64(pods), prefix+"apiserver-event-requests/pod")
	}
	for _, path := range slices.Sorted(maps.Keys(d.Served)) {
		if h := d.Served[path]; h.Count > 0 {
			report(h.Mean()*1000, prefix+"served-"+strings.Trim(pathName(path), "-")+"-mean-ms")
		}
	}
	if len(d.Served) > 0 {
		report(d.Connections/float64(pods), prefix+"webhook-connections/pod")
	}
}

// TopRequests lists the API server's most frequent requests of the interval
// per pod, "VERB resource=n.nn", most first: which requests a mode adds.
func (d CostDelta) TopRequests(n, pods int) string {
	if pods == 0 {
		return ""
	}
	keys := slices.SortedFunc(maps.Keys(d.RequestsBy), func(a, b string) int {
		if c := cmp.Compare(d.RequestsBy[b], d.RequestsBy[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var out []string
	for _, k := range keys[:min(n, len(keys))] {
		if v := d.RequestsBy[k] / float64(pods); v >= 0.005 {
			out = append(out, fmt.Sprintf("%s=%.2f", k, v))
		}
	}
	return strings.Join(out, ", ")
}

// pathName is the last element of a webhook path: "mutate-pods".
func pathName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// histogramDelta sums a histogram family's series by key and subtracts the
// earlier snapshot's.
func histogramDelta(now, before map[string]*dto.MetricFamily, family string, key func(*dto.Metric) string) map[string]Histogram {
	sum := func(fams map[string]*dto.MetricFamily, sign float64, into map[string]Histogram) {
		f := fams[family]
		if f == nil {
			return
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			k := key(m)
			acc := into[k]
			acc.Count += sign * float64(h.GetSampleCount())
			acc.Sum += sign * h.GetSampleSum()
			for i, b := range h.GetBucket() {
				if len(acc.Bounds) <= i {
					acc.Bounds = append(acc.Bounds, b.GetUpperBound())
					acc.Counts = append(acc.Counts, 0)
				}
				acc.Counts[i] += sign * float64(b.GetCumulativeCount())
			}
			into[k] = acc
		}
	}
	out := map[string]Histogram{}
	sum(now, 1, out)
	sum(before, -1, out)
	for k, h := range out {
		if n := len(h.Bounds); n == 0 || !math.IsInf(h.Bounds[n-1], 1) {
			h.Bounds, h.Counts = append(h.Bounds, math.Inf(1)), append(h.Counts, h.Count)
			out[k] = h
		}
	}
	return out
}

func counterDeltaBy(now, before map[string]*dto.MetricFamily, family string, key func(*dto.Metric) string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range now[family].GetMetric() {
		out[key(m)] += m.GetCounter().GetValue()
	}
	for _, m := range before[family].GetMetric() {
		out[key(m)] -= m.GetCounter().GetValue()
	}
	return out
}

// ProcessCPU is the user and system CPU time a process has used, from
// /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces and parentheses):
	// state is field 3, utime and stime fields 14 and 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 > len(stat) {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	fs := strings.Fields(string(stat[i+2:]))
	if len(fs) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	const clockTicks = 100 // USER_HZ on every Linux this runs on
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// LoadAverage is the 1-minute load average from /proc/loadavg (0 if unreadable).
func LoadAverage() float64 {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Split(bufio.ScanWords)
	if !sc.Scan() {
		return 0
	}
	v, _ := strconv.ParseFloat(sc.Text(), 64)
	return v
}

// Add sums o into d (blocks of one mode, measured apart).
func (d *CostDelta) Add(o CostDelta) {
	d.Took += o.Took
	if d.CPU == nil {
		d.CPU = map[string]time.Duration{}
	}
	for k, v := range o.CPU {
		d.CPU[k] += v
	}
	if d.Webhooks == nil {
		d.Webhooks = map[string]Histogram{}
	}
	for k, h := range o.Webhooks {
		d.Webhooks[k] = d.Webhooks[k].plus(h)
	}
	d.FlowControlWait = d.FlowControlWait.plus(o.FlowControlWait)
	d.Requests += o.Requests
	if d.RequestsBy == nil {
		d.RequestsBy = map[string]float64{}
	}
	for k, v := range o.RequestsBy {
		d.RequestsBy[k] += v
	}
	if d.Served == nil {
		d.Served = map[string]Histogram{}
	}
	for k, h := range o.Served {
		d.Served[k] = d.Served[k].plus(h)
	}
	d.Connections += o.Connections
	if d.Controllers == nil {
		d.Controllers = map[string]ControllerWork{}
	}
	for k, w := range o.Controllers {
		acc := d.Controllers[k]
		acc.Reconciles += w.Reconciles
		acc.Time, acc.QueueWait = acc.Time.plus(w.Time), acc.QueueWait.plus(w.QueueWait)
		d.Controllers[k] = acc
	}
	d.ShareSeenToBound = d.ShareSeenToBound.plus(o.ShareSeenToBound)
}

func (h Histogram) plus(o Histogram) Histogram {
	if h.Count == 0 && len(h.Bounds) == 0 {
		return o
	}
	if !slices.Equal(h.Bounds, o.Bounds) {
		return h // differently bucketed: keep the first (never within one API server)
	}
	out := Histogram{Count: h.Count + o.Count, Sum: h.Sum + o.Sum, Bounds: h.Bounds, Counts: slices.Clone(h.Counts)}
	for i := range out.Counts {
		out.Counts[i] += o.Counts[i]
	}
	return out
}

// measure runs f, the block named name, between two snapshots and adds what
// it cost to into.
func (c *Costs) measure(ctx context.Context, b interface{ Fatal(...any) }, into *CostDelta, name string, f func()) {
	s0, err := c.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if c != nil && c.Profile != nil {
		done := c.Profile(ctx, name)
		f()
		done()
	} else {
		f()
	}
	s1, err := c.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	into.Add(s1.Since(s0))
}
