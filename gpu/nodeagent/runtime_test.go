package nodeagent

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
)

func runtimeCondition(t *testing.T, n *corev1.Node) corev1.NodeCondition {
	t.Helper()
	for _, c := range n.Status.Conditions {
		if c.Type == contract.ConditionGPURuntimeSafe {
			return c
		}
	}
	t.Fatalf("node %s has no %s condition: %v", n.Name, contract.ConditionGPURuntimeSafe, n.Status.Conditions)
	return corev1.NodeCondition{}
}

func taintKeys(n *corev1.Node) []string {
	var keys []string
	for _, t := range n.Spec.Taints {
		keys = append(keys, t.Key)
	}
	return keys
}

// patches counts the patch actions a clientset saw.
func patches(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

func TestRuntimePolicies(t *testing.T) {
	unsafe := func() runtimeconfig.Verdict {
		return runtimeconfig.Judge(runtimeconfig.Input{Files: []runtimeconfig.File{{Path: "/etc/c.toml", Data: []byte(runtimeconfig.KeyAcceptEnvvar + " = true\n")}}})
	}
	safe := func() runtimeconfig.Verdict {
		return runtimeconfig.Judge(runtimeconfig.Input{Files: []runtimeconfig.File{{Path: "/etc/c.toml", Data: []byte(runtimeconfig.Simulated)}}})
	}
	for _, policy := range []RuntimePolicy{RuntimeFence, RuntimeWarn} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := context.Background()
			c := healthClient()
			rec := events.NewFakeRecorder(10)
			m, err := NewRuntimeMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			check := &RuntimeCheck{Client: c, NodeName: "n0", Policy: policy, Judge: unsafe, Recorder: rec, Metrics: m}
			if _, err := check.Enforce(ctx); err != nil {
				t.Fatal(err)
			}
			n, _ := c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
			cond := runtimeCondition(t, n)
			if cond.Status != corev1.ConditionFalse || cond.Reason != runtimeconfig.ReasonEnvvarAccepted || !strings.Contains(cond.Message, "/etc/c.toml sets "+runtimeconfig.KeyAcceptEnvvar+" = true") {
				t.Errorf("condition %+v", cond)
			}
			wantTaints := []string{contract.LabelPool}
			fenced := 0.0
			if policy == RuntimeFence {
				wantTaints = append(wantTaints, contract.TaintGPURuntimeUnsafe)
				fenced = 1
			}
			if d := cmp.Diff(wantTaints, taintKeys(n)); d != "" {
				t.Errorf("taints (-want +got):\n%s", d)
			}
			if ev := drainEvents(rec); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning "+ReasonRuntimeUnsafe) {
				t.Errorf("events %q", ev)
			}
			if got := testutil.ToFloat64(m.Unsafe.WithLabelValues("n0", runtimeconfig.ReasonEnvvarAccepted)); got != 1 {
				t.Errorf("unsafe metric %v", got)
			}
			if got := testutil.ToFloat64(m.Fenced.WithLabelValues("n0")); got != fenced {
				t.Errorf("fenced metric %v, want %v", got, fenced)
			}

			// The same verdict again: no write, no event.
			c.ClearActions()
			if _, err := check.Enforce(ctx); err != nil {
				t.Fatal(err)
			}
			if p := patches(c.Actions()); p != 0 {
				t.Errorf("an unchanged verdict patched %d times: %v", p, c.Actions())
			}
			if ev := drainEvents(rec); len(ev) != 0 {
				t.Errorf("events %q", ev)
			}

			// Fixed: condition True, no taint, a Normal event, metrics 0.
			check.Judge = safe
			if _, err := check.Enforce(ctx); err != nil {
				t.Fatal(err)
			}
			n, _ = c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
			if cond := runtimeCondition(t, n); cond.Status != corev1.ConditionTrue || cond.Reason != runtimeconfig.ReasonEnvvarIgnored {
				t.Errorf("condition %+v", cond)
			}
			if d := cmp.Diff([]string{contract.LabelPool}, taintKeys(n)); d != "" {
				t.Errorf("taints (-want +got):\n%s", d)
			}
			if ev := drainEvents(rec); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal "+ReasonRuntimeSafe) {
				t.Errorf("events %q", ev)
			}
			if got := testutil.CollectAndCount(m.Unsafe); got != 1 {
				t.Errorf("%d unsafe series, want the safe one only", got)
			}
			if got := testutil.ToFloat64(m.Fenced.WithLabelValues("n0")); got != 0 {
				t.Errorf("fenced metric %v", got)
			}
		})
	}
}

// A first safe verdict records no event; a long message is cut to the
// events API's limit.
func TestRuntimeEvents(t *testing.T) {
	ctx := context.Background()
	c := healthClient()
	rec := events.NewFakeRecorder(10)
	check := &RuntimeCheck{Client: c, NodeName: "n0", Policy: RuntimeFence, Recorder: rec, Judge: func() runtimeconfig.Verdict {
		return runtimeconfig.Verdict{Safe: true, Reason: runtimeconfig.ReasonEnvvarIgnored, Message: "fine"}
	}}
	if _, err := check.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := drainEvents(rec); len(ev) != 0 {
		t.Errorf("events %q", ev)
	}
	check.Judge = func() runtimeconfig.Verdict {
		return runtimeconfig.Verdict{Reason: runtimeconfig.ReasonConfigMissing, Message: strings.Repeat("é", 2000)}
	}
	if _, err := check.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	ev := drainEvents(rec)
	if len(ev) != 1 {
		t.Fatalf("events %q", ev)
	}
	note := strings.TrimPrefix(ev[0], "Warning "+ReasonRuntimeUnsafe+" ")
	if len(note) > maxEventNote || !strings.HasSuffix(note, "...") {
		t.Errorf("note of %d bytes: %q", len(note), note[len(note)-10:])
	}
}
