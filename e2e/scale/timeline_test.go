package scale

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/podstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// The steps between a team's host objects and VClusterReady, each first seen
// by a watch of the host: the control plane's workload created (a StatefulSet,
// or a Deployment for an ephemeral datastore), Helm's release record deployed
// (the install is done), its pod Ready (kwok), the workload's status counting
// it ready (the StatefulSet or Deployment controller), its
// Service's EndpointSlice listing a ready endpoint (the EndpointSlice
// controller). What is left after the last is the manager noticing and
// writing the Team's status.
const (
	stepReleaseDeployed = "ReleaseDeployed"
	stepWorkload        = "WorkloadCreated"
	stepPodReady        = "PodReady"
	stepWorkloadUp      = "WorkloadReady"
	stepEndpointReady   = "EndpointReady"
)

// timelineSteps in the order they happen.
var timelineSteps = []string{stepWorkload, stepReleaseDeployed, stepPodReady, stepWorkloadUp, stepEndpointReady}

// watchTimeline marks the steps above on tw for team namespaces; stop ends
// its watches.
func watchTimeline(ctx context.Context, cs kubernetes.Interface, tw *teamWatch) (stop func(), err error) {
	opens := []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return cs.CoreV1().Secrets("").Watch(ctx, metav1.ListOptions{LabelSelector: "owner=helm,status=deployed"})
		},
		func() (watch.Interface, error) { return cs.AppsV1().StatefulSets("").Watch(ctx, metav1.ListOptions{}) },
		func() (watch.Interface, error) { return cs.AppsV1().Deployments("").Watch(ctx, metav1.ListOptions{}) },
		func() (watch.Interface, error) { return cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{}) },
		func() (watch.Interface, error) {
			return cs.DiscoveryV1().EndpointSlices("").Watch(ctx, metav1.ListOptions{})
		},
	}
	var ws []watch.Interface
	stop = func() {
		for _, w := range ws {
			w.Stop()
		}
	}
	for _, open := range opens {
		w, err := open()
		if err != nil {
			stop()
			return stop, err
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		go func() {
			for ev := range w.ResultChan() {
				now := time.Now()
				o, ok := ev.Object.(metav1.Object)
				if !ok {
					continue
				}
				team, ok := strings.CutPrefix(o.GetNamespace(), gpuvcv1.HostNamespace(""))
				if !ok {
					continue
				}
				for _, step := range stepsOf(ev.Object) {
					tw.mark(team, step, now)
				}
			}
		}()
	}
	return stop, nil
}

// stepsOf is the steps obj shows done.
func stepsOf(obj any) []string {
	switch o := obj.(type) {
	case *corev1.Secret:
		return []string{stepReleaseDeployed}
	case *appsv1.StatefulSet:
		if o.Status.ReadyReplicas > 0 {
			return []string{stepWorkload, stepWorkloadUp}
		}
		return []string{stepWorkload}
	case *appsv1.Deployment:
		if o.Status.ReadyReplicas > 0 {
			return []string{stepWorkload, stepWorkloadUp}
		}
		return []string{stepWorkload}
	case *corev1.Pod:
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return []string{stepPodReady}
			}
		}
	case *discoveryv1.EndpointSlice:
		if podstatus.ReadyEndpoints([]discoveryv1.EndpointSlice{*o}) > 0 {
			return []string{stepEndpointReady}
		}
	}
	return nil
}
