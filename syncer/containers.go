package syncer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// containerView is what security checks read of any container kind, with the
// field path used in messages.
type containerView struct {
	path    string // e.g. spec.containers[0]
	sc      *corev1.SecurityContext
	env     []corev1.EnvVar
	envFrom []corev1.EnvFromSource
	ports   []corev1.ContainerPort
}

// allContainers lists init, regular and ephemeral containers.
func allContainers(pod *corev1.Pod) []containerView {
	var out []containerView
	for i, c := range pod.Spec.InitContainers {
		out = append(out, containerView{fmt.Sprintf("spec.initContainers[%d]", i), c.SecurityContext, c.Env, c.EnvFrom, c.Ports})
	}
	for i, c := range pod.Spec.Containers {
		out = append(out, containerView{fmt.Sprintf("spec.containers[%d]", i), c.SecurityContext, c.Env, c.EnvFrom, c.Ports})
	}
	for i, c := range pod.Spec.EphemeralContainers {
		out = append(out, containerView{fmt.Sprintf("spec.ephemeralContainers[%d]", i), c.SecurityContext, c.Env, c.EnvFrom, c.Ports})
	}
	return out
}

// workloadContainer is an init or regular container with its field path; these
// are the containers that can request devices.
type workloadContainer struct {
	path string
	c    *corev1.Container
}

func workloadContainers(pod *corev1.Pod) []workloadContainer {
	var out []workloadContainer
	for i := range pod.Spec.InitContainers {
		out = append(out, workloadContainer{fmt.Sprintf("spec.initContainers[%d]", i), &pod.Spec.InitContainers[i]})
	}
	for i := range pod.Spec.Containers {
		out = append(out, workloadContainer{fmt.Sprintf("spec.containers[%d]", i), &pod.Spec.Containers[i]})
	}
	return out
}
