package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

// sleepyTeam is the whole-idle-team half of TestIdleGPUPodsOnTheRealNode: a team
// with spec.idle.gpuPods.action Sleep running one GPU pod and one pod without
// GPUs through its own kubeconfig, in the same 5-minute window as the Evict team.
type sleepyTeam struct {
	name, ns, kubeconfig string
	vc                   kubernetes.Interface
	gpu                  string // the device the kubelet gave the GPU pod
	// event is the GPUIdle the team read on its GPU pod before the scale to zero;
	// lateFor says why it was not read (the control plane was already down).
	event   *corev1.Event
	seenAt  time.Time
	lateFor string
}

const sleepyGPUPod, sleepyCPUPod = "notebook", "sidecar"

// startSleepyTeam creates the team, sets the policy as a platform engineer would
// and runs its two pods; the test writes 0 % for the GPU pod's device.
func startSleepyTeam(ctx context.Context, t *testing.T, node *localnode.Node) *sleepyTeam {
	t.Helper()
	s := &sleepyTeam{name: "dozer"}
	s.ns = "team-" + s.name
	// sleepAfter far beyond the test: only the GPU-pod policy may put it to sleep.
	createTeam(ctx, t, s.name, "--pool", realPool, "--gpus", "1", "--sleep-after", "30m")
	kubectl(ctx, t, backend.Kubeconfig(), "patch", "team", s.name, "--type=merge", "-p",
		`{"spec":{"idle":{"gpuPods":{"after":"5m","action":"Sleep","maxUtilizationPercent":10}}}}`)
	s.kubeconfig = teamKubeconfig(t, s.name)
	s.vc = teamClient(t, s.kubeconfig)
	_, err := submitVirtualPod(ctx, t, s.name, workload(sleepyGPUPod, "sleep 3600").GPUs("1").Obj())
	require.NoError(t, err)
	_, err = submitVirtualPod(ctx, t, s.name, workload(sleepyCPUPod, "sleep 3600").Obj())
	require.NoError(t, err)
	for _, name := range []string{sleepyGPUPod, sleepyCPUPod} {
		waitVirtualPod(ctx, t, s.vc, name, running)
	}
	got := kubeletDevices(ctx, t, node)[s.ns+"/"+hostPodFor(sleepyGPUPod, "default", s.name)]
	require.Len(t, got, 1, "the kubelet's devices of %s", sleepyGPUPod)
	s.gpu = got[0]
	return s
}

// controlPlaneReplicas is the spec.replicas of the team's control-plane
// Deployment (the local stack's vClusters are ephemeral: a Deployment).
func (s *sleepyTeam) controlPlaneReplicas(ctx context.Context) (int32, error) {
	d, err := backend.Client().AppsV1().Deployments(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	if d.Spec.Replicas == nil {
		return 1, nil
	}
	return *d.Spec.Replicas, nil
}

// lookForEvent reads the GPU pod's events through the team's kubeconfig while
// the control plane is still up; once it is scaled to zero it stops, since a
// request then would reach the waker and wake the team. Done once the event is
// seen or the chance has passed.
func (s *sleepyTeam) lookForEvent(ctx context.Context) bool {
	if s.event != nil || s.lateFor != "" {
		return true
	}
	switch n, err := s.controlPlaneReplicas(ctx); {
	case err != nil:
		return false
	case n == 0:
		s.lateFor = "the control plane was scaled to zero before GPUIdle could be read on " + sleepyGPUPod
		return true
	}
	if s.event, _ = gpuIdleEvent(ctx, s.vc, sleepyGPUPod); s.event != nil {
		s.seenAt = time.Now()
	}
	return s.event != nil
}

// checkAsleep: the event the team saw, the Team's Asleep condition, the control
// plane at zero, both host pods evicted and the GPU back.
func (s *sleepyTeam) checkAsleep(ctx context.Context, t *testing.T, node *localnode.Node, began time.Time) {
	t.Helper()
	require.Empty(t, s.lateFor)
	require.NotNil(t, s.event)
	require.GreaterOrEqual(t, s.seenAt.Sub(began), 5*time.Minute, "acted on before the window: %s", s.event.Message)
	require.Equal(t, corev1.EventTypeWarning, s.event.Type)
	for _, want := range []string{"at or below 10%", "action Sleep", "all 1 GPU pod(s) of the team"} {
		require.Contains(t, s.event.Message, want)
	}
	t.Logf("team %s sees on its GPU pod, %v after the GPU went idle and before the sleep: %s %s: %s",
		s.name, s.seenAt.Sub(began).Round(time.Second), s.event.Type, s.event.Reason, s.event.Message)

	var cond string
	eventually(ctx, t, "team "+s.name+"'s Asleep condition True with the policy's reason", func(ctx context.Context) (bool, string) {
		out, err := kubectlOutput(ctx, backend.Kubeconfig(), "get", "team", s.name, "-o",
			`jsonpath={range .status.conditions[?(@.type=="`+gpuvcv1.ConditionAsleep+`")]}{.status}|{.reason}|{.message}{end}`)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		cond = out
		return strings.HasPrefix(out, "True|"+gpuvcv1.ReasonAsleep+"|"), out
	})
	for _, want := range []string{"spec.idle.gpuPods.action Sleep", "at or below 10%", "for 5m0s", "2 team pod(s) evicted"} {
		require.Contains(t, cond, want)
	}
	t.Logf("team %s asleep %v after its GPU went idle: %s", s.name, time.Since(began).Round(time.Second), cond)

	n, err := s.controlPlaneReplicas(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "the control plane's replicas")
	host := backend.Client()
	eventually(ctx, t, "no control-plane pod and both team pods evicted", func(ctx context.Context) (bool, string) {
		l, err := host.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vcluster,release=" + s.name})
		if err != nil {
			return false, err.Error()
		}
		if len(l.Items) > 0 {
			return false, fmt.Sprintf("%d control-plane pods", len(l.Items))
		}
		for _, name := range []string{sleepyGPUPod, sleepyCPUPod} {
			_, err := host.CoreV1().Pods(s.ns).Get(ctx, hostPodFor(name, "default", s.name), metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("host pod of %s: %v", name, err)
			}
		}
		return true, ""
	})
	eventually(ctx, t, "the kubelet gives "+s.ns+" no GPU", func(ctx context.Context) (bool, string) {
		for owner, ids := range kubeletDevices(ctx, t, node) {
			if strings.HasPrefix(owner, s.ns+"/") {
				return false, fmt.Sprintf("%s holds %v", owner, ids)
			}
		}
		return true, ""
	})
}

// wakeAndLook wakes the team as a user would and reads what it sees. The local
// stack's vClusters are ephemeral (their datastore an emptyDir): the woken
// control plane starts empty, so the virtual pods are gone, not recreated, and
// nothing of the team's objects is left to resync; the team reads why it slept
// in the Awake event the manager writes after the wake.
func (s *sleepyTeam) wakeAndLook(ctx context.Context, t *testing.T) {
	t.Helper()
	began := time.Now()
	r := gpuvc(t, "team", "wake", s.name, "--wait", "--timeout", "3m")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.out, r.errOut)
	eventually(ctx, t, "team "+s.name+"'s API answering after the wake", func(ctx context.Context) (bool, string) {
		_, err := s.vc.Discovery().ServerVersion()
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("team %s woken (gpuvc team wake --wait, then its API) in %v", s.name, time.Since(began).Round(100*time.Millisecond))

	pods, err := s.vc.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	require.Empty(t, names, "virtual pods after the wake of an ephemeral vCluster")
	eventually(ctx, t, "the team's Awake event saying why it slept, read with its kubeconfig", func(ctx context.Context) (bool, string) {
		messages, err := teamEventMessages(ctx, s.kubeconfig, "Awake")
		if err != nil {
			return false, err.Error()
		}
		for _, m := range messages {
			if strings.Contains(m, "woken by request (gpuvc team wake)") && strings.Contains(m, "it was asleep since") &&
				strings.Contains(m, "spec.idle.gpuPods.action Sleep") {
				t.Logf("team %s reads after the wake: %s", s.name, m)
				return true, ""
			}
		}
		return false, fmt.Sprint(messages)
	})
}
