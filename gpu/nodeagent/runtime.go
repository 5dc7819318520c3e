package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
)

// RuntimePolicy is what the agent does to its node when the NVIDIA container
// runtime would honour NVIDIA_VISIBLE_DEVICES from an unprivileged container.
type RuntimePolicy string

const (
	// RuntimeFence sets the GPURuntimeSafe condition, records an event, sets
	// the metric and taints the node gpuvc.dev/gpu-runtime-unsafe=true:NoSchedule.
	RuntimeFence RuntimePolicy = "fence"
	// RuntimeWarn does all of that but the taint (and removes the taint an
	// earlier fencing run left).
	RuntimeWarn RuntimePolicy = "warn"
)

// ParseRuntimePolicy reads a --gpu-runtime value (without "off").
func ParseRuntimePolicy(s string) (RuntimePolicy, error) {
	switch p := RuntimePolicy(s); p {
	case RuntimeFence, RuntimeWarn:
		return p, nil
	}
	return "", fmt.Errorf("%q is not one of fence, warn", s)
}

// RuntimeFieldManager writes the runtime condition and taint.
const RuntimeFieldManager = "gpuvc-agent-runtime"

// Event reasons on the Node of the runtime check.
const (
	ReasonRuntimeUnsafe = "GPURuntimeUnsafe"
	ReasonRuntimeSafe   = "GPURuntimeSafe"
)

// RuntimeCheck keeps the verdict about the node's container-runtime
// configuration on its Node: condition, taint (by policy), event, metrics.
type RuntimeCheck struct {
	Client   kubernetes.Interface
	NodeName string
	Policy   RuntimePolicy
	// Judge reads the configuration again and decides; called on every
	// enforcement, so a fixed file lifts the fence at the next one.
	Judge func() runtimeconfig.Verdict
	// Recorder records events on the Node; nil records none.
	Recorder events.EventRecorder
	// Metrics, if set, export the verdict.
	Metrics *RuntimeMetrics
	// Resync is the time between two checks; zero means one minute.
	Resync time.Duration
}

// Run checks now and then every Resync until ctx ends (nil).
func (c *RuntimeCheck) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("node", c.NodeName)
	resync := c.Resync
	if resync <= 0 {
		resync = time.Minute
	}
	t := time.NewTicker(resync)
	defer t.Stop()
	for {
		v, err := c.Enforce(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error(err, "enforcing the GPU runtime check failed; retrying", "in", resync)
		} else if err == nil {
			log.V(1).Info("GPU runtime checked", "safe", v.Safe, "reason", v.Reason)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// runtimeCondition is the condition for a verdict under a policy.
func (c *RuntimeCheck) runtimeCondition(v runtimeconfig.Verdict) (corev1.ConditionStatus, string) {
	msg := v.Message
	switch {
	case v.Safe:
	case c.Policy == RuntimeFence:
		msg += fmt.Sprintf(". Fenced: tainted %s=true:NoSchedule (pods already running stay)", contract.TaintGPURuntimeUnsafe)
	default:
		msg += ". Warn only (gpuvc agent --gpu-runtime=warn): not tainted, tenant pods are still placed here"
	}
	for _, w := range v.Warnings {
		msg += ". Warning: " + w
	}
	if v.Safe {
		return corev1.ConditionTrue, msg
	}
	return corev1.ConditionFalse, msg
}

// Enforce judges the configuration and makes the Node show it. Idempotent: an
// unchanged verdict writes nothing.
func (c *RuntimeCheck) Enforce(ctx context.Context) (runtimeconfig.Verdict, error) {
	v := c.Judge()
	fenced := !v.Safe && c.Policy == RuntimeFence
	c.Metrics.set(c.NodeName, v, fenced)
	nodes := c.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, c.NodeName, metav1.GetOptions{})
	if err != nil {
		return v, fmt.Errorf("reading node %q: %w", c.NodeName, err)
	}
	status, message := c.runtimeCondition(v)
	var have *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == contract.ConditionGPURuntimeSafe {
			have = &node.Status.Conditions[i]
		}
	}
	if have == nil || have.Status != status || have.Reason != v.Reason || have.Message != message {
		transition := metav1.Now()
		if have != nil && have.Status == status {
			transition = have.LastTransitionTime
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
			Type: contract.ConditionGPURuntimeSafe, Status: status, Reason: v.Reason, Message: message,
			LastTransitionTime: transition, LastHeartbeatTime: metav1.Now(),
		}}}})
		if err != nil {
			return v, err
		}
		if node, err = nodes.Patch(ctx, c.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: RuntimeFieldManager}, "status"); err != nil {
			return v, fmt.Errorf("setting condition %s on node %q: %w", contract.ConditionGPURuntimeSafe, c.NodeName, err)
		}
		// An event for every change of verdict; none for a first safe one.
		if !v.Safe {
			c.event(node, corev1.EventTypeWarning, ReasonRuntimeUnsafe, message)
		} else if have != nil && have.Status != corev1.ConditionTrue {
			c.event(node, corev1.EventTypeNormal, ReasonRuntimeSafe, message)
		}
	}
	err = onFreshNode(ctx, c.Client, c.NodeName, node, func(n *corev1.Node) error {
		has := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPURuntimeUnsafe })
		switch {
		case fenced && !has:
			taints := append(slices.Clone(n.Spec.Taints), corev1.Taint{Key: contract.TaintGPURuntimeUnsafe, Value: "true", Effect: corev1.TaintEffectNoSchedule})
			return patchNodeSpec(ctx, c.Client, n, map[string]any{"taints": taints}, RuntimeFieldManager)
		case !fenced && has:
			taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == contract.TaintGPURuntimeUnsafe })
			return patchNodeSpec(ctx, c.Client, n, map[string]any{"taints": taints}, RuntimeFieldManager)
		}
		return nil
	})
	if err != nil {
		return v, fmt.Errorf("updating taint %s on node %q: %w", contract.TaintGPURuntimeUnsafe, c.NodeName, err)
	}
	return v, nil
}

// maxEventNote is the events.k8s.io limit of a note.
const maxEventNote = 1024

func (c *RuntimeCheck) event(node *corev1.Node, kind, reason, note string) {
	if c.Recorder == nil {
		return
	}
	if len(note) > maxEventNote {
		note = strings.ToValidUTF8(note[:maxEventNote-3], "") + "..."
	}
	c.Recorder.Eventf(node, nil, kind, reason, "GPURuntimeCheck", "%s", note)
}

// RuntimeMetrics export the runtime verdict. A nil *RuntimeMetrics records
// nothing.
type RuntimeMetrics struct {
	// Unsafe is 1 while the runtime would honour NVIDIA_VISIBLE_DEVICES from
	// an unprivileged container, by reason; 0 otherwise (one series per node:
	// the reason label follows the verdict).
	Unsafe *prometheus.GaugeVec
	// Fenced is 1 while the agent wants its taint on the node.
	Fenced *prometheus.GaugeVec

	mu     sync.Mutex
	reason map[string]string // node → reason label last set
}

// NewRuntimeMetrics registers the series on reg.
func NewRuntimeMetrics(reg prometheus.Registerer) (*RuntimeMetrics, error) {
	m := &RuntimeMetrics{
		Unsafe: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_agent_gpu_runtime_unsafe",
			Help: "1 while the node's NVIDIA container toolkit would honour NVIDIA_VISIBLE_DEVICES from an unprivileged container (reason: which setting); 0 when it would not.",
		}, []string{"node", "reason"}),
		Fenced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_agent_gpu_runtime_fenced",
			Help: "1 while the agent taints the node gpuvc.dev/gpu-runtime-unsafe for its runtime configuration; 0 otherwise (also under --gpu-runtime=warn).",
		}, []string{"node"}),
		reason: map[string]string{},
	}
	for _, c := range []prometheus.Collector{m.Unsafe, m.Fenced} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *RuntimeMetrics) set(node string, v runtimeconfig.Verdict, fenced bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.reason[node]; ok && old != v.Reason {
		m.Unsafe.DeleteLabelValues(node, old)
	}
	m.reason[node] = v.Reason
	unsafe, f := 0.0, 0.0
	if !v.Safe {
		unsafe = 1
	}
	if fenced {
		f = 1
	}
	m.Unsafe.WithLabelValues(node, v.Reason).Set(unsafe)
	m.Fenced.WithLabelValues(node).Set(f)
}
