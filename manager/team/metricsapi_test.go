package team

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// groupsOnly answers ServerGroups from a script; the rest of discovery is unused.
type groupsOnly struct {
	discovery.DiscoveryInterface
	groups []string
	err    error
	calls  int
}

func (g *groupsOnly) ServerGroups() (*metav1.APIGroupList, error) {
	g.calls++
	if g.err != nil {
		return nil, g.err
	}
	l := &metav1.APIGroupList{}
	for _, n := range g.groups {
		l.Groups = append(l.Groups, metav1.APIGroup{Name: n})
	}
	return l, nil
}

func TestMetricsProxyModes(t *testing.T) {
	ctx := context.Background()
	on, err := MetricsProxy(MetricsProxyOn, nil)
	require.NoError(t, err)
	require.True(t, on(ctx))
	off, err := MetricsProxy(MetricsProxyOff, nil)
	require.NoError(t, err)
	require.Nil(t, off, "off: the reconciler never proxies")
	_, err = MetricsProxy("sometimes", nil)
	require.EqualError(t, err, `--vcluster-metrics-proxy "sometimes": want auto, on, off`)
}

// auto follows the host's discovery, at most once a minute, and keeps its
// last answer through a failed lookup (each flip upgrades every team's release).
func TestMetricsProxyAutoFollowsTheHost(t *testing.T) {
	ctx := context.Background()
	dc := &groupsOnly{groups: []string{"apps", "batch"}}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	p := &metricsAPIProbe{dc: dc, now: func() time.Time { return now }}

	require.False(t, p.served(ctx), "no metrics.k8s.io on the host")
	dc.groups = append(dc.groups, MetricsAPIGroup)
	require.False(t, p.served(ctx), "asked again within the minute")
	require.Equal(t, 1, dc.calls)

	now = now.Add(metricsAPIRecheck)
	require.True(t, p.served(ctx), "metrics-server installed since")
	dc.err = errors.New("the server is currently unable to handle the request")
	now = now.Add(metricsAPIRecheck)
	require.True(t, p.served(ctx), "a failed lookup keeps the last answer")
	dc.err, dc.groups = nil, []string{"apps"}
	require.False(t, p.served(ctx), "metrics-server removed: the next lookup says so")
}
