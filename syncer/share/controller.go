package share

import (
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults of Options.
const (
	DefaultEmptyGrace    = 5 * time.Second
	DefaultRetryInterval = 30 * time.Second
)

// DefaultCommand is what a reservation pod runs.
var DefaultCommand = []string{"gpuvc", "reserve"}

// Options configure the share controller. Client, APIReader and Image are
// required.
type Options struct {
	// Client writes pods and ConfigMaps and reads namespaces and node labels
	// (from the cache): the manager's client.
	Client client.Client
	// APIReader reads a team's pods and ConfigMaps straight from the API server
	// (mgr.GetAPIReader()): decisions never rest on a cache that has not yet
	// seen the controller's own last writes.
	APIReader client.Reader
	// Recorder emits events on share pods (events.k8s.io).
	Recorder events.EventRecorder
	// Teams maps namespaces to teams; nil means NamespaceTeams{Reader: Client}.
	Teams TeamSource
	// Metrics records per-team metrics; nil records none.
	Metrics *Metrics

	// Image of reservation pods (the gpuvc image); Command defaults to
	// DefaultCommand.
	Image   string
	Command []string
	// ServiceAccountName of reservation pods; it needs get/patch on its own pod
	// to record the GPU UUID. "" uses the namespace's default account.
	ServiceAccountName string
	// PriorityClassName of reservation pods (it must be allowed by the team
	// policy, or the webhook removes it).
	PriorityClassName string
	// Resources besides the GPU a reservation pod requests (requests = limits);
	// nil means 10m CPU and 64Mi memory. Quotas on CPU or memory need them.
	Resources corev1.ResourceList

	// EmptyGrace is how long an empty reservation is kept for pods that may
	// follow (a burst reuses it); 0 means DefaultEmptyGrace.
	EmptyGrace time.Duration
	// RetryInterval re-examines a team while pods wait for quota or nodes, in
	// case no event announces the room; 0 means DefaultRetryInterval.
	RetryInterval time.Duration
	// MaxConcurrentReconciles is how many teams are served at once (default 1).
	MaxConcurrentReconciles int
	// Clock is for tests; nil is the real clock.
	Clock clock.PassiveClock
}

// Controller is the share controller. It reconciles one team namespace at a
// time (the request name is the namespace).
type Controller struct {
	opts Options
	memo eventMemo

	// simMu serialises simulated UUID choices across teams (see simulated.go).
	simMu sync.Mutex

	mu sync.Mutex
	// emptySince: per namespace, when each reservation (by UID) was first seen
	// without shares.
	emptySince map[string]map[types.UID]time.Time
	// firstSeen: per namespace, when the watch first delivered each share pod
	// (see latency.go).
	firstSeen map[string]map[types.UID]time.Time
	// blocks: per namespace, the last quota refusal (see quota.go).
	blocks map[string]quotaBlock
}

// New returns a share controller; add it to a manager with SetupWithManager.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.APIReader == nil {
		return nil, errors.New("share controller: Options.Client and Options.APIReader are required")
	}
	if opts.Image == "" {
		return nil, errNoImage
	}
	if opts.Teams == nil {
		opts.Teams = NamespaceTeams{Reader: opts.Client}
	}
	if len(opts.Command) == 0 {
		opts.Command = DefaultCommand
	}
	if opts.Resources == nil {
		// `gpuvc reserve` is the whole gpuvc binary: starting it touches ~75 MiB
		// of its file and ~40 ms of CPU (measured, docs/share.md). Below that a
		// limit throttles and pages the start into tens of seconds, and the
		// team's fractional pods wait for all of it.
		opts.Resources = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		}
	}
	if opts.EmptyGrace <= 0 {
		opts.EmptyGrace = DefaultEmptyGrace
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = DefaultRetryInterval
	}
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = 1
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{opts: opts, emptySince: map[string]map[types.UID]time.Time{}, firstSeen: map[string]map[types.UID]time.Time{}, blocks: map[string]quotaBlock{}}, nil
}
