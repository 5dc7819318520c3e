package teamevents

import (
	"context"
	"fmt"
	"net"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControlPlaneAddress is host:port of a ready pod of the vCluster control plane
// that release runs in namespace (the chart names the StatefulSet or Deployment
// and the Service after the release), at the Service's https target port; ""
// when no pod is ready (asleep, starting). The waker proxies to it, and team
// events are written to it, without the Service.
func ControlPlaneAddress(ctx context.Context, reader client.Reader, namespace, release string) (string, error) {
	key := types.NamespacedName{Namespace: namespace, Name: release}
	var selector *metav1.LabelSelector
	sts := &appsv1.StatefulSet{}
	err := reader.Get(ctx, key, sts)
	switch {
	case err == nil:
		selector = sts.Spec.Selector
	case apierrors.IsNotFound(err):
		dep := &appsv1.Deployment{}
		if err := reader.Get(ctx, key, dep); err != nil {
			return "", fmt.Errorf("reading the vCluster control plane %s/%s (StatefulSet or Deployment): %w", namespace, release, err)
		}
		selector = dep.Spec.Selector
	default:
		return "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return "", err
	}
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return "", err
	}
	svc := &corev1.Service{}
	if err := reader.Get(ctx, key, svc); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" || !podReady(&p) {
			continue
		}
		if port := targetPort(svc, &p); port != 0 {
			return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port))), nil
		}
	}
	return "", nil
}

// HTTPSPortName is the name of the Service port teams connect to (vCluster's
// chart: https); its first port otherwise.
func HTTPSPortName(svc *corev1.Service) string {
	for _, p := range svc.Spec.Ports {
		if p.Name == "https" {
			return p.Name
		}
	}
	if len(svc.Spec.Ports) > 0 {
		return svc.Spec.Ports[0].Name
	}
	return "https"
}

// targetPort resolves the Service's https target port on the pod.
func targetPort(svc *corev1.Service, p *corev1.Pod) int32 {
	name := HTTPSPortName(svc)
	for _, sp := range svc.Spec.Ports {
		if sp.Name != name {
			continue
		}
		if sp.TargetPort.Type == intstr.Int {
			if sp.TargetPort.IntVal != 0 {
				return sp.TargetPort.IntVal
			}
			return sp.Port
		}
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return cp.ContainerPort
				}
			}
		}
	}
	return 0
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
