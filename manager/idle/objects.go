package idle

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamevents"
)

// vcluster names one team's vCluster objects: the chart names the Service and the
// control plane (StatefulSet, or Deployment with an ephemeral datastore) after
// the release.
type vcluster struct {
	team, namespace, release string
}

func vclusterOf(t *gpuvcv1.Team) vcluster {
	return vcluster{team: t.Name, namespace: gpuvcv1.HostNamespace(t.Name), release: gpuvcv1.ReleaseName(t)}
}

func (v vcluster) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: v.namespace, Name: name}
}

// observe reads the team's routing, control-plane scale and pods back from the host.
func (s *Sleeper) observe(ctx context.Context, v vcluster) (state, error) {
	var st state
	svc := &corev1.Service{}
	if err := s.reader.Get(ctx, v.key(v.release), svc); err != nil {
		return st, fmt.Errorf("reading the vCluster Service %s/%s: %w", v.namespace, v.release, err)
	}
	_, st.routed = svc.Annotations[contract.AnnotationIdleSelector]
	cp, err := s.controlPlane(ctx, v)
	if err != nil {
		return st, err
	}
	st.replicas = ptr.Deref(cp.replicas(), 1)
	pods := &corev1.PodList{}
	if err := s.reader.List(ctx, pods, client.InNamespace(v.namespace)); err != nil {
		return st, fmt.Errorf("listing pods of %s: %w", v.namespace, err)
	}
	for _, p := range pods.Items {
		if isWorkload(&p, v) {
			st.workloadPods++
		}
	}
	return st, nil
}

// isWorkload: a pod of the team that is not its control plane nor one of
// vCluster's system pods (kube-system of the virtual cluster), and not finished.
func isWorkload(p *corev1.Pod, v vcluster) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
		return false
	}
	if p.Labels["app"] == "vcluster" && p.Labels["release"] == v.release {
		return false
	}
	return !isSystemPod(p)
}

func isSystemPod(p *corev1.Pod) bool {
	return p.Labels[contract.KeyVClusterNamespace] == "kube-system" || p.Annotations[contract.KeyVClusterNamespace] == "kube-system"
}

// controlPlaneObject is the StatefulSet or Deployment running the control plane.
type controlPlaneObject struct{ client.Object }

func (c controlPlaneObject) replicas() *int32 {
	switch o := c.Object.(type) {
	case *appsv1.StatefulSet:
		return o.Spec.Replicas
	case *appsv1.Deployment:
		return o.Spec.Replicas
	}
	return nil
}

func (c controlPlaneObject) selector() *metav1.LabelSelector {
	switch o := c.Object.(type) {
	case *appsv1.StatefulSet:
		return o.Spec.Selector
	case *appsv1.Deployment:
		return o.Spec.Selector
	}
	return nil
}

func (s *Sleeper) controlPlane(ctx context.Context, v vcluster) (controlPlaneObject, error) {
	sts := &appsv1.StatefulSet{}
	err := s.reader.Get(ctx, v.key(v.release), sts)
	if err == nil {
		return controlPlaneObject{sts}, nil
	}
	if !apierrors.IsNotFound(err) {
		return controlPlaneObject{}, err
	}
	dep := &appsv1.Deployment{}
	if err := s.reader.Get(ctx, v.key(v.release), dep); err != nil {
		return controlPlaneObject{}, fmt.Errorf("reading the vCluster control plane %s/%s (StatefulSet or Deployment): %w", v.namespace, v.release, err)
	}
	return controlPlaneObject{dep}, nil
}

// scale sets the control plane's replicas; to zero it records the replicas it had.
func (s *Sleeper) scale(ctx context.Context, v vcluster, to int32) error {
	cp, err := s.controlPlane(ctx, v)
	if err != nil {
		return err
	}
	annotations := map[string]any{}
	if to == 0 {
		annotations[contract.AnnotationAwakeReplicas] = strconv.Itoa(int(ptr.Deref(cp.replicas(), 1)))
	} else {
		annotations[contract.AnnotationAwakeReplicas] = nil
		if n, err := strconv.Atoi(cp.GetAnnotations()[contract.AnnotationAwakeReplicas]); err == nil && n > 0 {
			to = int32(n)
		}
	}
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": annotations},
		"spec":     map[string]any{"replicas": to},
	})
	return s.client.Patch(ctx, cp.Object, client.RawPatch(types.MergePatchType, patch))
}

// route points the team's Service at the waker: the waker's EndpointSlice first,
// then the Service's selector is saved and removed (the EndpointSlice controller
// then drops the control plane's endpoints).
func (s *Sleeper) route(ctx context.Context, v vcluster, port int32) error {
	svc := &corev1.Service{}
	if err := s.reader.Get(ctx, v.key(v.release), svc); err != nil {
		return err
	}
	if err := s.ensureWakerSlice(ctx, v, svc, port); err != nil {
		return err
	}
	if _, done := svc.Annotations[contract.AnnotationIdleSelector]; !done {
		saved, _ := json.Marshal(svc.Spec.Selector)
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{contract.AnnotationIdleSelector: string(saved)}},
			"spec":     map[string]any{"selector": nil},
		})
		if err := s.client.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
	}
	return s.deleteControllerSlices(ctx, v)
}

// deleteControllerSlices removes the EndpointSlices the EndpointSlice controller
// made for the Service: for a Service without a selector it stops updating them
// but does not delete them (found on the real node), so the control plane's endpoint would stay beside the
// waker's (and, once the pod is gone, point nowhere: "no route to host").
//
// The same holds for the Endpoints controller and its Endpoints object, which the
// EndpointSlice mirroring controller would then mirror into a slice of its own:
// that object goes first.
func (s *Sleeper) deleteControllerSlices(ctx context.Context, v vcluster) error {
	//nolint:staticcheck // the legacy Endpoints object is what gets mirrored
	legacy := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: v.release, Namespace: v.namespace}}
	if err := s.client.Delete(ctx, legacy); client.IgnoreNotFound(err) != nil {
		return err
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := s.reader.List(ctx, slices, client.InNamespace(v.namespace), client.MatchingLabels{discoveryv1.LabelServiceName: v.release}); err != nil {
		return err
	}
	for i := range slices.Items {
		if sl := &slices.Items[i]; sl.Labels[discoveryv1.LabelManagedBy] != contract.WakerManagedBy {
			if err := s.client.Delete(ctx, sl); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// ensureWakerSlice creates or updates the EndpointSlice naming the waker (this
// manager's address and the team's waker port) under the Service's https port name.
func (s *Sleeper) ensureWakerSlice(ctx context.Context, v vcluster, svc *corev1.Service, port int32) error {
	name := teamevents.HTTPSPortName(svc)
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: contract.WakerSliceName, Namespace: v.namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: v.release,
			discoveryv1.LabelManagedBy:   contract.WakerManagedBy,
			contract.LabelTeam:           v.team,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{s.opts.WakerIP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	got := &discoveryv1.EndpointSlice{}
	err := s.reader.Get(ctx, v.key(contract.WakerSliceName), got)
	if apierrors.IsNotFound(err) {
		return s.client.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(got.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(got.Ports, want.Ports) &&
		equality.Semantic.DeepEqual(got.Labels, want.Labels) {
		return nil
	}
	got.Labels, got.AddressType, got.Endpoints, got.Ports = want.Labels, want.AddressType, want.Endpoints, want.Ports
	return s.client.Update(ctx, got)
}

// wakerPort is the port of the team's waker EndpointSlice, 0 if it has none.
func (s *Sleeper) wakerPort(ctx context.Context, v vcluster) (int32, error) {
	slice := &discoveryv1.EndpointSlice{}
	err := s.reader.Get(ctx, v.key(contract.WakerSliceName), slice)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil || len(slice.Ports) == 0 {
		return 0, err
	}
	return ptr.Deref(slice.Ports[0].Port, 0), nil
}

// unroute gives the Service its selector back and, once the EndpointSlice
// controller lists a ready control plane for it (or after a short wait), removes
// the waker's EndpointSlice.
func (s *Sleeper) unroute(ctx context.Context, v vcluster) error {
	svc := &corev1.Service{}
	if err := s.reader.Get(ctx, v.key(v.release), svc); err != nil {
		return err
	}
	if saved, ok := svc.Annotations[contract.AnnotationIdleSelector]; ok {
		var selector map[string]string
		if err := json.Unmarshal([]byte(saved), &selector); err != nil {
			return fmt.Errorf("Service %s/%s: annotation %s is not a selector: %w", v.namespace, v.release, contract.AnnotationIdleSelector, err)
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{contract.AnnotationIdleSelector: nil}},
			"spec":     map[string]any{"selector": selector},
		})
		if err := s.client.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return err
		}
	}
	s.waitServiceEndpoints(ctx, v)
	err := s.client.Delete(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: contract.WakerSliceName, Namespace: v.namespace}})
	return client.IgnoreNotFound(err)
}

// waitServiceEndpoints waits, briefly, until a slice of the EndpointSlice
// controller lists a ready endpoint of the Service, so that removing the waker's
// slice leaves no moment without one.
func (s *Sleeper) waitServiceEndpoints(ctx context.Context, v vcluster) {
	_ = s.poll(ctx, s.opts.EndpointsWait, func(ctx context.Context) (bool, error) {
		slices := &discoveryv1.EndpointSliceList{}
		if err := s.reader.List(ctx, slices, client.InNamespace(v.namespace), client.MatchingLabels{discoveryv1.LabelServiceName: v.release}); err != nil {
			return false, nil
		}
		for _, sl := range slices.Items {
			if sl.Labels[discoveryv1.LabelManagedBy] == contract.WakerManagedBy {
				continue
			}
			for _, e := range sl.Endpoints {
				if ptr.Deref(e.Conditions.Ready, false) {
					return true, nil
				}
			}
		}
		return false, nil
	})
}
