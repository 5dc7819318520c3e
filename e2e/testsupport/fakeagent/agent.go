package fakeagent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/usage"
)

// Agent is one node agent's metrics endpoint.
type Agent struct {
	IP      string
	Port    int
	scrapes atomic.Int64
}

// Serve serves what `gpuvc agent --metrics-bind-address` serves on GPU node
// node: the utilization samples, each device under the pod the kubelet gave it
// (owners by device UUID). The server stops when the test ends.
func Serve(t testing.TB, node string, samples []usage.Sample, owners map[string]nodeagent.DeviceOwner) *Agent {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&nodeagent.UtilizationCollector{
		Node:   node,
		Read:   func() ([]usage.Sample, error) { return samples, nil },
		Owners: func(context.Context) (map[string]nodeagent.DeviceOwner, error) { return owners, nil },
		Log:    logr.Discard(),
	})
	a := &Agent{}
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		metrics.ServeHTTP(w, r)
		a.scrapes.Add(1)
	}))
	t.Cleanup(srv.Close)
	host, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if a.Port, err = strconv.Atoi(p); err != nil {
		t.Fatal(err)
	}
	a.IP = host
	return a
}

// Scrapes is how many scrapes the agent has answered in full. A manager's
// look at the GPU pods scrapes once, so two more scrapes than before mean a
// whole look ran in between.
func (a *Agent) Scrapes() int64 { return a.scrapes.Load() }

// Percent is a utilization sample's value.
func Percent(v float64) *float64 { return &v }
