package dra

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
)

// DeviceClasses are the classes a claim names to get a whole GPU
// (contract.DeviceClassGPU) or a MIG device (contract.DeviceClassMIG) of the
// driver, as NVIDIA's driver installs them. Neither maps an extended
// resource (spec.extendedResourceName): nvidia.com/gpu stays the device
// plugin's.
func DeviceClasses() []*resourceapi.DeviceClass {
	return []*resourceapi.DeviceClass{
		deviceClass(contract.DeviceClassGPU, contract.DRATypeGPU),
		deviceClass(contract.DeviceClassMIG, contract.DRATypeMIG),
	}
}

func deviceClass(name, typ string) *resourceapi.DeviceClass {
	expr := fmt.Sprintf("device.driver == %q && device.attributes[%q].%s == %q",
		contract.DRADriver, contract.DRADriver, contract.DRAAttributeType, typ)
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "gpuvc"}},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: expr}}},
		},
	}
}

// EnsureDeviceClasses creates the DeviceClasses, or sets their selectors
// where they exist.
func EnsureDeviceClasses(ctx context.Context, client kubernetes.Interface) error {
	classes := client.ResourceV1().DeviceClasses()
	for _, want := range DeviceClasses() {
		_, err := classes.Create(ctx, want, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			if err != nil {
				return fmt.Errorf("creating DeviceClass %s: %w", want.Name, err)
			}
			continue
		}
		got, err := classes.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading DeviceClass %s: %w", want.Name, err)
		}
		got.Spec.Selectors = want.Spec.Selectors
		if _, err := classes.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating DeviceClass %s: %w", want.Name, err)
		}
	}
	return nil
}
