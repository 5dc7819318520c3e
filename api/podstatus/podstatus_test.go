package podstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	mutate(&p)
	return p
}

func waiting(name, reason, msg string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func TestNotReadySaysWhatIsInTheWay(t *testing.T) {
	now := metav1.Now()
	cases := map[string]struct {
		pod  corev1.Pod
		want string
	}{
		"ready": {pod("m-1", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}), ""},
		"being deleted": {pod("m-1", func(p *corev1.Pod) { p.DeletionTimestamp = &now }), ""},
		"gated": {pod("m-1", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "gpuvc.dev/gpu-share"}}
		}), "pod m-1 is held by the scheduling gate gpuvc.dev/gpu-share (the share controller is finding it a GPU)"},
		"unschedulable": {pod("m-1", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/4 nodes are available"}}
		}), "pod m-1 cannot be scheduled: 0/4 nodes are available"},
		"unschedulable, reason only": {pod("m-1", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
		}), "pod m-1 cannot be scheduled: Unschedulable"},
		"image": {pod("m-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("manager", "ImagePullBackOff", "not found")}
		}), "pod m-1 container manager is waiting: ImagePullBackOff: not found"},
		"init container first": {pod("m-1", func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{waiting("setup", "ErrImagePull", "")}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("main", "PodInitializing", "")}
		}), "pod m-1 container setup is waiting: ErrImagePull"},
		"creating is not a problem": {pod("m-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("main", "ContainerCreating", "")}
		}), "pod m-1 is Pending"},
		"crashing": {pod("m-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "manager", RestartCount: 3,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
		}), "pod m-1 container manager is waiting: CrashLoopBackOff (restarted 3 times, last exit code 1 Error)"},
		"exited": {pod("m-1", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}
		}), "pod m-1 container main exited with code 137 OOMKilled"},
		"probe": {pod("m-1", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "manager", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}), "pod m-1 container manager is running, not ready yet (readiness probe)"},
		"no status": {pod("m-1", func(p *corev1.Pod) { p.Status.Phase = "" }), "pod m-1 has no status yet"},
	}
	for name, tc := range cases {
		if got := NotReady(&tc.pod); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, tc.want)
		}
	}
}

func TestFirstNotReadyGoesByName(t *testing.T) {
	ready := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	pods := []corev1.Pod{
		pod("c", func(*corev1.Pod) {}),
		pod("a", ready),
		pod("b", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("x", "ErrImagePull", "")}
		}),
	}
	if got, want := FirstNotReady(pods), "pod b container x is waiting: ErrImagePull"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if pods[0].Name != "c" {
		t.Error("FirstNotReady reordered the caller's slice")
	}
	if got := FirstNotReady([]corev1.Pod{pod("a", ready)}); got != "" {
		t.Errorf("all ready: got %q", got)
	}
}

func TestSummary(t *testing.T) {
	cases := map[string]struct {
		pod  corev1.Pod
		want string
	}{
		"running": {pod("p", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning; p.Spec.NodeName = "n1" }), "Running on n1"},
		"gated": {pod("p", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "gpuvc.dev/gpu-share"}}
		}), "Pending: held by the scheduling gate gpuvc.dev/gpu-share (the share controller is finding it a GPU)"},
		"pulling": {pod("p", func(p *corev1.Pod) {
			p.Spec.NodeName = "h100-0"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("main", "ErrImagePull", "pull access denied")}
		}), "Pending on h100-0: container main is waiting: ErrImagePull: pull access denied"},
		"plain pending": {pod("p", func(*corev1.Pod) {}), "Pending"},
		"no status":     {pod("p", func(p *corev1.Pod) { p.Status.Phase = "" }), "no status yet"},
	}
	for name, tc := range cases {
		if got := Summary(&tc.pod); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, tc.want)
		}
	}
}
