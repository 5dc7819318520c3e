package vclusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of a Client.
const (
	// DefaultStaleAfter is how long a release may stay pending before Apply takes it
	// for the leftover of an interrupted operation. gpuvc's Helm operations never
	// wait for workloads, so they take seconds; ten minutes leaves a wide margin.
	DefaultStaleAfter = 10 * time.Minute
	// DefaultMaxHistory bounds the release revisions (Secrets) Helm keeps.
	DefaultMaxHistory = 10
	// helmTimeout bounds one Helm operation against the API server.
	helmTimeout = 5 * time.Minute
)

// Client installs, upgrades, inspects and uninstalls vCluster releases on one host
// cluster. It is safe for concurrent use; operations on the same release are
// serialised by Helm's pending status (see Apply).
type Client struct {
	kube       kubernetes.Interface
	getter     func(namespace string) *restGetter
	charts     chartCache
	releases   releaseSummaries
	clock      clock.PassiveClock
	staleAfter time.Duration
	// aloneSince, when set, is when this process became the only one operating
	// on releases (see WithAloneSince).
	aloneSince func() time.Time
	maxHistory int
	// actionConfig builds Helm's configuration for a namespace; tests swap in
	// in-memory storage.
	actionConfig func(ctx context.Context, namespace string) (*action.Configuration, error)
}

// Option configures a Client.
type Option func(*Client)

// WithClock sets the clock used to judge how old a pending release is.
func WithClock(c clock.PassiveClock) Option { return func(cl *Client) { cl.clock = c } }

// WithStaleAfter sets how long a release may stay pending before Apply recovers it.
func WithStaleAfter(d time.Duration) Option { return func(cl *Client) { cl.staleAfter = d } }

// WithAloneSince tells the client since when its process is the only one
// operating on releases: the elected leader, or a manager running without
// leader election (one replica). A release left pending or uninstalling before
// that instant was left by a process that is gone — killed mid-operation — so
// Apply recovers it at once instead of after the stale-after duration, and a
// manager restarted after a crash does not leave teams half-created for ten
// minutes. since returns the zero time while the process does not act alone
// (not elected yet).
func WithAloneSince(since func() time.Time) Option {
	return func(cl *Client) { cl.aloneSince = since }
}

// WithMaxHistory sets how many release revisions Helm keeps (0: unlimited).
func WithMaxHistory(n int) Option { return func(cl *Client) { cl.maxHistory = n } }

// New returns a Client acting on the cluster of config with its credentials.
func New(config *rest.Config, opts ...Option) (*Client, error) {
	if config == nil {
		return nil, errors.New("vclusters: nil rest.Config")
	}
	config = rest.CopyConfig(config)
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(dc)
	mapper := newRESTMapper(cached)
	c := &Client{
		kube: kube,
		getter: func(namespace string) *restGetter {
			return &restGetter{config: config, namespace: namespace, discovery: cached, mapper: mapper}
		},
		releases:   releaseSummaries{meta: meta},
		clock:      clock.RealClock{},
		staleAfter: DefaultStaleAfter,
		maxHistory: DefaultMaxHistory,
	}
	c.actionConfig = c.helmConfig
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// helmConfig is Helm's configuration for releases in namespace, stored as Secrets
// there (Helm's default driver), logging to the context's logger at V(4).
func (c *Client) helmConfig(ctx context.Context, namespace string) (*action.Configuration, error) {
	logger := klog.FromContext(ctx).WithValues("namespace", namespace)
	cfg := &action.Configuration{}
	err := cfg.Init(c.getter(namespace), namespace, "secret", func(format string, v ...any) {
		logger.V(4).Info(fmt.Sprintf(format, v...), "source", "helm")
	})
	if err != nil {
		return nil, fmt.Errorf("setting up Helm for namespace %s: %w", namespace, err)
	}
	return cfg, nil
}
