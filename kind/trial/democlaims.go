package trial

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// createVirtualTemplate creates a ResourceClaimTemplate in the team's virtual
// cluster, retrying while its API server is not serving yet, and waits until
// gpuvc's manager has copied it to the host (manager/teamclaims; vCluster OSS
// copies none): a pod naming a template the host lacks is refused there
// (ResourceClaimNotFound), which followPod would take as final.
func createVirtualTemplate(ctx context.Context, host, vc kubernetes.Interface, team string, tmpl *resourcev1.ResourceClaimTemplate, timeout time.Duration, log *progress) error {
	if err := createTemplate(ctx, vc, team, tmpl, timeout, log); err != nil {
		return err
	}
	ns := gpuvcv1.HostNamespace(team)
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := host.ResourceV1().ResourceClaimTemplates(ns).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelDRACopy + "=true"})
		if err != nil {
			return false, nil
		}
		for _, h := range list.Items {
			if a := h.Annotations; a[vclusterObjectNameAnnotation] == tmpl.Name && a[vclusterObjectNamespaceAnnotation] == tmpl.Namespace {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("team %s: gpuvc did not copy ResourceClaimTemplate %s to %s: %w", team, tmpl.Name, ns, err)
	}
	log.printf("team %s: ResourceClaimTemplate %s copied to the host", team, tmpl.Name)
	return nil
}

// The annotations naming the virtual object of a host copy (vCluster's keys,
// which gpuvc's copies carry too).
const (
	vclusterObjectNameAnnotation      = "vcluster.loft.sh/object-name"
	vclusterObjectNamespaceAnnotation = "vcluster.loft.sh/object-namespace"
)

func createTemplate(ctx context.Context, vc kubernetes.Interface, team string, tmpl *resourcev1.ResourceClaimTemplate, timeout time.Duration, log *progress) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := vc.ResourceV1().ResourceClaimTemplates(tmpl.Namespace).Create(ctx, tmpl, metav1.CreateOptions{})
		switch {
		case err == nil:
			log.printf("team %s: ResourceClaimTemplate %s created in its virtual cluster", team, tmpl.Name)
			return true, nil
		case apierrors.IsAlreadyExists(err):
			return true, nil
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			return false, fmt.Errorf("team %s: ResourceClaimTemplate %s refused by its virtual cluster: %w", team, tmpl.Name, err)
		}
		last = err
		return false, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("team %s: creating ResourceClaimTemplate %s: %v", team, tmpl.Name, last)
	}
	return err
}

// claimedDevices names the DRA devices allocated to the host pod's claims,
// e.g. "DRA gpu.nvidia.com: gpu-7", or "" for a pod without claims.
func claimedDevices(ctx context.Context, host kubernetes.Interface, hp *corev1.Pod) string {
	var devices []string
	for _, s := range hp.Status.ResourceClaimStatuses {
		if s.ResourceClaimName == nil {
			continue
		}
		c, err := host.ResourceV1().ResourceClaims(hp.Namespace).Get(ctx, *s.ResourceClaimName, metav1.GetOptions{})
		if err != nil || c.Status.Allocation == nil {
			devices = append(devices, "(claim "+*s.ResourceClaimName+" not read)")
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			devices = append(devices, "DRA "+r.Driver+": "+r.Device)
		}
	}
	return strings.Join(devices, ", ")
}
