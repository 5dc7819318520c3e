package suite

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// TestVClusterSleepsAndWakesOnTheRealNode: a team's vCluster put to sleep has no
// control-plane pod left; a kubectl request with the team's kubeconfig then
// succeeds (the manager's waker wakes the control plane and client-go retries),
// the pod is back and the Service points at it again. Three rounds; the wake
// latency (what kubectl waited) is logged with its median.
func TestVClusterSleepsAndWakesOnTheRealNode(t *testing.T) {
	e2e(t)
	needsRunningContainers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	const team = "nap"
	ns := "team-" + team
	createTeam(ctx, t, team, "--pool", realPool, "--gpus", "1", "--sleep-after", "30m")
	kc := teamKubeconfig(t, team)
	host := backend.Client()
	controlPlanePods := func(ctx context.Context) ([]corev1.Pod, error) {
		l, err := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vcluster,release=" + team})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	var latencies []time.Duration
	for round := 1; round <= 3; round++ {
		r := gpuvc(t, "team", "sleep", team, "--wait", "--timeout", "3m")
		require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.out, r.errOut)
		eventually(ctx, t, "no control-plane pod while asleep", func(ctx context.Context) (bool, string) {
			pods, err := controlPlanePods(ctx)
			if err != nil {
				return false, err.Error()
			}
			return len(pods) == 0, fmt.Sprintf("%d pods", len(pods))
		})
		// kube-proxy on this loaded machine can lag the routing change by more than
		// the manager's settle time; the request must meet the waker, not a stale
		// endpoint of the deleted pod.
		slice, err := host.DiscoveryV1().EndpointSlices(ns).Get(ctx, contract.WakerSliceName, metav1.GetOptions{})
		require.NoError(t, err)
		waker := fmt.Sprintf("%s:%d", slice.Endpoints[0].Addresses[0], *slice.Ports[0].Port)
		eventually(ctx, t, "kube-proxy routing "+ns+"/"+team+" to the waker "+waker, func(ctx context.Context) (bool, string) {
			ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			got, err := serviceDestinations(ctx, ns+"/"+team+":https")
			if err != nil {
				return false, err.Error()
			}
			return len(got) == 1 && got[0] == waker, fmt.Sprint(got)
		})

		began := time.Now()
		out := kubectl(ctx, t, kc, "get", "ns", "-o", "name")
		latency := time.Since(began)
		latencies = append(latencies, latency)
		require.Contains(t, out, "namespace/default", "the first request after sleep must succeed")
		t.Logf("round %d: kubectl get ns through the sleeping vCluster took %v", round, latency.Round(time.Millisecond))

		pods, err := controlPlanePods(ctx)
		require.NoError(t, err)
		require.Len(t, pods, 1, "the control plane is back")
		eventually(ctx, t, "the Service routed back to the control plane", func(ctx context.Context) (bool, string) {
			svc, err := host.CoreV1().Services(ns).Get(ctx, team, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			_, routed := svc.Annotations[contract.AnnotationIdleSelector]
			_, err = host.DiscoveryV1().EndpointSlices(ns).Get(ctx, contract.WakerSliceName, metav1.GetOptions{})
			return !routed && err != nil, fmt.Sprintf("routed %v, waker slice lookup: %v", routed, err)
		})
		// Awake again: requests go straight to the control plane.
		require.Contains(t, kubectl(ctx, t, kc, "get", "ns", "-o", "name"), "namespace/default")
		for _, line := range strings.Split(gpuvc(t, "team", "get", team).out, "\n") {
			if strings.HasPrefix(line, "Idle:") {
				t.Logf("round %d: %s", round, line)
			}
		}
	}
	// The team reads, through its own kubeconfig (manager/teamevents), on the
	// virtual Namespace default, that it was woken, since when and why it slept.
	// The Asleep event told before each scale to zero is gone here: this stack's
	// vClusters keep their datastore in an emptyDir, so a woken one starts empty.
	eventually(ctx, t, "the team's Awake event, read with its kubeconfig", func(ctx context.Context) (bool, string) {
		messages, err := teamEventMessages(ctx, kc, "Awake")
		if err != nil {
			return false, err.Error()
		}
		for _, m := range messages {
			if strings.Contains(m, "woken by a connection") && strings.Contains(m, "it was asleep since") && strings.Contains(m, "gpuvc team sleep") {
				return true, ""
			}
		}
		return false, fmt.Sprint(messages)
	})

	// A quota change while the vCluster sleeps waits for it and reaches the
	// team after the wake.
	r := gpuvc(t, "team", "sleep", team, "--wait", "--timeout", "3m")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.out, r.errOut)
	kubectl(ctx, t, backend.Kubeconfig(), "patch", "team", team, "--type", "merge", "-p", `{"spec":{"quota":{"gpus":2}}}`)
	eventually(ctx, t, "the quota change in the team's own cluster after a wake", func(ctx context.Context) (bool, string) {
		messages, err := teamEventMessages(ctx, kc, "QuotaChanged") // the request wakes the vCluster
		if err != nil {
			return false, err.Error()
		}
		for _, m := range messages {
			if strings.Contains(m, "requests.nvidia.com/gpu 1 → 2") {
				return true, ""
			}
		}
		return false, fmt.Sprint(messages)
	})

	r = gpuvc(t, "team", "get", team)
	require.Contains(t, r.out, "last wake took", r.out)
	events := gpuvc(t, "team", "get", team, "-o", "yaml")
	require.Contains(t, events.out, "lastWake")
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	var round []string
	for _, l := range latencies {
		round = append(round, l.Round(100*time.Millisecond).String())
	}
	t.Logf("wake latency (kubectl get ns on a sleeping vCluster), sorted: %s; p50 %v", strings.Join(round, ", "), latencies[len(latencies)/2].Round(100*time.Millisecond))
}

// serviceDestinations are the DNAT destinations kube-proxy (iptables mode) has
// programmed for a Service port ("namespace/name:port") on the system node.
func serviceDestinations(ctx context.Context, port string) ([]string, error) {
	cmd, err := backend.SystemNodeCommand(ctx, "iptables-save", "-t", "nat")
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("iptables-save: %w", err)
	}
	var dest []string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.Contains(line, `"`+port+`"`) || !strings.Contains(line, "--to-destination") {
			continue
		}
		f := strings.Fields(line)
		dest = append(dest, f[len(f)-1])
	}
	return dest, nil
}

// teamEventMessages are the messages of gpuvc's events of one reason in the
// team's own cluster, as the team's kubeconfig reads them.
func teamEventMessages(ctx context.Context, kubeconfig, reason string) ([]string, error) {
	selector := "involvedObject.kind=Namespace,involvedObject.name=default,source=gpuvc,reason=" + reason
	out, err := kubectlOutput(ctx, kubeconfig, "get", "events", "-n", "default", "--field-selector", selector,
		"-o", "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}")
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}
