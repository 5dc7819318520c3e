package teamclaims

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// copyStatus makes virtual claim v's status the host copy h's: the allocation
// and the devices' status as they are, the reservations naming the team's own
// pods (host pods are vCluster's copies; reservations of pods of another
// virtual namespace, or of anything but a pod, are left out). The team's
// `kubectl get resourceclaim` then says allocated,reserved as the host does.
func (s *Team) copyStatus(ctx context.Context, v, h *resourcev1.ResourceClaim) error {
	want := resourcev1.ResourceClaimStatus{Allocation: h.Status.Allocation.DeepCopy()}
	if len(h.Status.Devices) > 0 {
		want.Devices = append([]resourcev1.AllocatedDeviceStatus(nil), h.Status.Devices...)
	}
	if want.Allocation != nil {
		var err error
		if want.ReservedFor, err = s.virtualConsumers(ctx, h, v.Namespace); err != nil {
			return err
		}
	}
	if equality.Semantic.DeepEqual(v.Status, want) {
		return nil
	}
	api := s.Virtual.ResourceV1().ResourceClaims(v.Namespace)
	if v.Status.Allocation != nil && !equality.Semantic.DeepEqual(v.Status.Allocation, want.Allocation) {
		// An allocation is immutable once written: clear it first (the host
		// claim was deallocated, or allocated again).
		c := v.DeepCopy()
		c.Status = resourcev1.ResourceClaimStatus{}
		updated, err := api.UpdateStatus(ctx, c, metav1.UpdateOptions{FieldManager: fieldManager})
		if err != nil {
			return fmt.Errorf("clearing the status of the team's claim %s/%s: %w", v.Namespace, v.Name, err)
		}
		v = updated
	}
	c := v.DeepCopy()
	c.Status = want
	if _, err := api.UpdateStatus(ctx, c, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("writing the status of the team's claim %s/%s from host claim %s/%s: %w", v.Namespace, v.Name, h.Namespace, h.Name, err)
	}
	return nil
}

// virtualConsumers is h's status.reservedFor with each host pod named as the
// team's pod in namespace (vCluster's annotations on the host pod).
func (s *Team) virtualConsumers(ctx context.Context, h *resourcev1.ResourceClaim, namespace string) ([]resourcev1.ResourceClaimConsumerReference, error) {
	var out []resourcev1.ResourceClaimConsumerReference
	for _, r := range h.Status.ReservedFor {
		if r.APIGroup != "" || r.Resource != "pods" {
			continue
		}
		p, err := s.Host.CoreV1().Pods(h.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading host pod %s/%s, which claim %s is reserved for: %w", h.Namespace, r.Name, h.Name, err)
		}
		if ref, ok := virtualPod(p, namespace); ok && p.UID == r.UID {
			out = append(out, ref)
		}
	}
	return out, nil
}

func virtualPod(p *corev1.Pod, namespace string) (resourcev1.ResourceClaimConsumerReference, bool) {
	a := p.Annotations
	if a[annotationNamespace] != namespace || a[annotationName] == "" || a[annotationUID] == "" {
		return resourcev1.ResourceClaimConsumerReference{}, false
	}
	return resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: a[annotationName], UID: types.UID(a[annotationUID])}, true
}
