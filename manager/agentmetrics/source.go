// Package agentmetrics reads the node agents' per-pod GPU utilization
// (gpuvc_team_gpu_utilization on each agent's /metrics) for the manager's idle
// GPU-pod policy: it implements idle.Utilization.
package agentmetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// AgentSelector selects the chart's agent pods (every DaemonSet of them).
var AgentSelector = labels.SelectorFromSet(labels.Set{
	"app.kubernetes.io/name":      "gpuvc",
	"app.kubernetes.io/component": "agent",
})

// Source scrapes every agent at most once per MaxAge and answers from that
// scrape: a pod's utilization is the busiest of the devices the kubelet gave it.
type Source struct {
	// Reader lists the agent pods.
	Reader client.Reader
	// Namespace of the agent pods (the chart's release namespace).
	Namespace string
	// Selector of the agent pods. Default AgentSelector.
	Selector labels.Selector
	// Port of the agent pods' metrics endpoint (--metrics-bind-address); 0
	// scrapes no agent pod.
	Port int
	// Addresses are agents that do not run as pods (a node's own `gpuvc agent`
	// daemon, as on the local stack's real node), host:port, scraped besides
	// the pods.
	Addresses []string
	// MaxAge of a scrape before the next look scrapes again. Default 30s.
	MaxAge time.Duration
	// HTTP scrapes the agents. Default: a client with a 5s timeout.
	HTTP *http.Client
	// Clock ages scrapes. Default: the real clock.
	Clock clock.PassiveClock

	mu      sync.Mutex
	at      time.Time
	scraped bool
	pods    map[string]float64 // namespace/pod → percent
}

// PodGPUUtilization implements idle.Utilization. known is false when no agent
// reported a device held by the pod (MIG devices carry no utilization; shares
// are held by their reservation pod).
func (s *Source) PodGPUUtilization(ctx context.Context, namespace, pod string) (float64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock().Now()
	if !s.scraped || now.Sub(s.at) >= s.maxAge() {
		pods, err := s.scrapeAll(ctx)
		if err != nil {
			return 0, false, err
		}
		s.pods, s.at, s.scraped = pods, now, true
	}
	p, ok := s.pods[namespace+"/"+pod]
	return p, ok, nil
}

// target is one agent's metrics endpoint.
type target struct{ name, node, url string }

// targets are the running agent pods (with Port) and the Addresses.
func (s *Source) targets(ctx context.Context) ([]target, error) {
	var out []target
	if s.Port != 0 {
		sel := s.Selector
		if sel == nil {
			sel = AgentSelector
		}
		agents := &corev1.PodList{}
		if err := s.Reader.List(ctx, agents, client.InNamespace(s.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("listing agent pods in %s (%s): %w", s.Namespace, sel, err)
		}
		for _, a := range agents.Items {
			if a.Status.Phase != corev1.PodRunning || a.Status.PodIP == "" {
				continue
			}
			out = append(out, target{name: a.Name, node: a.Spec.NodeName,
				url: "http://" + net.JoinHostPort(a.Status.PodIP, strconv.Itoa(s.Port)) + "/metrics"})
		}
	}
	for _, addr := range s.Addresses {
		out = append(out, target{name: addr, url: "http://" + addr + "/metrics"})
	}
	return out, nil
}

// scrapeAll scrapes every agent; an agent that does not answer is logged and
// its node's pods stay unknown until the next scrape.
func (s *Source) scrapeAll(ctx context.Context) (map[string]float64, error) {
	targets, err := s.targets(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	limit := make(chan struct{}, 8)
	for _, a := range targets {
		wg.Add(1)
		limit <- struct{}{}
		go func() {
			defer func() { <-limit; wg.Done() }()
			got, err := s.scrape(ctx, a.url)
			if err != nil {
				if !errors.Is(ctx.Err(), context.Canceled) {
					log.FromContext(ctx).Error(err, "scraping a GPU agent; its node's pods are unknown until the next scrape", "agent", a.name, "node", a.node)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range got {
				out[k] = max(out[k], v)
			}
		}()
	}
	wg.Wait()
	return out, nil
}

func (s *Source) scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	c := s.HTTP
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return PodUtilization(resp.Body)
}

func (s *Source) maxAge() time.Duration {
	if s.MaxAge <= 0 {
		return 30 * time.Second
	}
	return s.MaxAge
}

func (s *Source) clock() clock.PassiveClock {
	if s.Clock == nil {
		return clock.RealClock{}
	}
	return s.Clock
}
