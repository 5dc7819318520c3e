// Package podstatus says, in one wording shared by every command and
// controller, why a pod is not ready yet: unschedulable, gated, waiting on an
// image, crashing, failing its readiness probe. Installer waits, vCluster
// readiness and the trial's report all print these phrases, so a platform
// engineer reads the same sentence wherever a pod is stuck.
package podstatus

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// NotReady explains why the pod is not ready, or returns "" when it is ready
// or being deleted. The sentence starts with "pod <name>".
func NotReady(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil || Ready(p) {
		return ""
	}
	return "pod " + p.Name + " " + why(p)
}

// FirstNotReady explains the first pod, by name, that is not ready, or "".
func FirstNotReady(pods []corev1.Pod) string {
	sorted := append([]corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i := range sorted {
		if s := NotReady(&sorted[i]); s != "" {
			return s
		}
	}
	return ""
}

// Summary describes a pod whatever its state: its phase, its node, and while
// it is not running why it waits ("Pending on node-1: container main is
// waiting: ErrImagePull: pull access denied").
func Summary(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	if s == "" {
		s = "no status yet"
	}
	if p.Spec.NodeName != "" {
		s += " on " + p.Spec.NodeName
	}
	if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
		return s
	}
	if w := why(p); w != "is "+string(p.Status.Phase) && w != "has no status yet" {
		s += ": " + strings.TrimPrefix(w, "is ")
	}
	return s
}

// Ready reports whether the pod's Ready condition is True.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// why is the predicate of the sentence: the first thing in the pod's way.
func why(p *corev1.Pod) string {
	for _, g := range p.Spec.SchedulingGates {
		return "is held by the scheduling gate " + g.Name + gateHint(g.Name)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "cannot be scheduled: " + firstNonEmpty(c.Message, c.Reason, "no reason given")
		}
	}
	containers := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, c := range containers {
		if s := containerProblem(c); s != "" {
			return s
		}
	}
	if p.Status.Phase == "" {
		return "has no status yet"
	}
	return "is " + string(p.Status.Phase)
}

// containerProblem names a container that keeps the pod from being ready.
// Creating and initializing are normal steps, not problems.
func containerProblem(c corev1.ContainerStatus) string {
	switch {
	case c.State.Waiting != nil && c.State.Waiting.Reason != "" &&
		c.State.Waiting.Reason != "ContainerCreating" && c.State.Waiting.Reason != "PodInitializing":
		s := "container " + c.Name + " is waiting: " + c.State.Waiting.Reason
		if c.State.Waiting.Message != "" {
			s += ": " + c.State.Waiting.Message
		}
		if t := c.LastTerminationState.Terminated; t != nil {
			s += fmt.Sprintf(" (restarted %d times, last exit code %d %s)", c.RestartCount, t.ExitCode, t.Reason)
		}
		return s
	case c.State.Terminated != nil && c.State.Terminated.ExitCode != 0:
		return fmt.Sprintf("container %s exited with code %d %s", c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason)
	case c.State.Running != nil && !c.Ready:
		return "container " + c.Name + " is running, not ready yet (readiness probe)"
	}
	return ""
}

// gateHint says who lifts the gates gpuvc and its neighbours use.
func gateHint(gate string) string {
	switch gate {
	case contract.GateGPUShare:
		return " (the share controller is finding it a GPU)"
	case "kueue.x-k8s.io/admission":
		return " (Kueue admits it when its queue has quota)"
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
