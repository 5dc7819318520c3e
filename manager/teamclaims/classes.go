package teamclaims

import (
	"context"
	"errors"
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// syncClasses shows the host DeviceClasses the team may use in its cluster,
// as the host has them, and removes the ones it showed that the team may no
// longer use (or the host no longer has). vCluster OSS shows none: its
// sync.fromHost.deviceClasses is a Pro feature, and its selector could only
// pick classes by label anyway.
func (s *Team) syncClasses(ctx context.Context) error {
	api := s.Virtual.ResourceV1().DeviceClasses()
	shown, err := api.List(ctx, copySelector)
	if err != nil {
		return fmt.Errorf("listing the DeviceClasses shown in the team's cluster: %w", err)
	}
	var errs []error
	var kept []string
	for _, name := range s.Classes {
		h, err := s.Host.ResourceV1().DeviceClasses().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading host DeviceClass %s: %w", name, err))
			kept = append(kept, name) // unknown: keep what is shown
			continue
		}
		kept = append(kept, name)
		if err := s.showClass(ctx, h); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range shown.Items {
		if slices.Contains(kept, c.Name) {
			continue
		}
		if err := api.Delete(ctx, c.Name, deleteOptions(c.UID)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("removing DeviceClass %s from the team's cluster: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// showClass creates or updates the team's copy of host class h. A class of
// that name the team made itself is taken over: the name is the host's.
func (s *Team) showClass(ctx context.Context, h *resourcev1.DeviceClass) error {
	api := s.Virtual.ResourceV1().DeviceClasses()
	v, err := api.Get(ctx, h.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c := &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: h.Name, Labels: map[string]string{contract.LabelDRACopy: "true"}},
			Spec:       *h.Spec.DeepCopy(),
		}
		if _, err := api.Create(ctx, c, metav1.CreateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("showing DeviceClass %s in the team's cluster: %w", h.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading DeviceClass %s in the team's cluster: %w", h.Name, err)
	}
	if v.Labels[contract.LabelDRACopy] == "true" && equality.Semantic.DeepEqual(v.Spec, h.Spec) {
		return nil
	}
	c := v.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[contract.LabelDRACopy] = "true"
	c.Spec = *h.Spec.DeepCopy()
	if _, err := api.Update(ctx, c, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("updating DeviceClass %s in the team's cluster: %w", h.Name, err)
	}
	return nil
}
