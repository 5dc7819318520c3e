package team

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Metrics proxy modes (gpuvc manager --vcluster-metrics-proxy).
const (
	MetricsProxyAuto = "auto" // on while the host registers the Metrics API
	MetricsProxyOn   = "on"
	MetricsProxyOff  = "off"
)

// MetricsAPIGroup is the group metrics-server serves.
const MetricsAPIGroup = "metrics.k8s.io"

// metricsAPIRecheck is how long an answer of the host's discovery is reused.
const metricsAPIRecheck = time.Minute

// MetricsProxy returns Options.MetricsProxy for a mode. vCluster's proxy
// registers the Metrics API inside each team's cluster; on a host without
// metrics-server that API would never become available there, and an
// unavailable aggregated API keeps the team's namespaces from being deleted
// (their discovery fails). So "auto" proxies only while the host registers
// metrics.k8s.io, asking its discovery at most once a minute.
func MetricsProxy(mode string, dc discovery.DiscoveryInterface) (func(context.Context) bool, error) {
	switch mode {
	case MetricsProxyOn:
		return func(context.Context) bool { return true }, nil
	case MetricsProxyOff:
		return nil, nil
	case MetricsProxyAuto, "":
		p := &metricsAPIProbe{dc: dc, now: time.Now}
		return p.served, nil
	}
	return nil, fmt.Errorf("--vcluster-metrics-proxy %q: want %s", mode, strings.Join([]string{MetricsProxyAuto, MetricsProxyOn, MetricsProxyOff}, ", "))
}

// metricsAPIProbe remembers whether the host's discovery lists the Metrics API.
type metricsAPIProbe struct {
	dc  discovery.DiscoveryInterface
	now func() time.Time

	mu      sync.Mutex
	checked time.Time
	answer  bool
}

// served reports whether the host registers metrics.k8s.io. A failed lookup
// keeps the last answer, so a discovery hiccup does not flip every team's
// vCluster values (each flip is a Helm upgrade).
func (p *metricsAPIProbe) served(context.Context) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.checked.IsZero() && p.now().Sub(p.checked) < metricsAPIRecheck {
		return p.answer
	}
	groups, err := p.dc.ServerGroups()
	if err != nil {
		return p.answer
	}
	p.checked = p.now()
	p.answer = slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == MetricsAPIGroup })
	return p.answer
}
