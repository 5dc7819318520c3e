package share

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

// ReservationPrefix starts every reservation pod's name.
const ReservationPrefix = "gpuvc-gpu-"

// reservationPod is the pod that holds one whole GPU of team's pool for its
// share pods. The real scheduler picks its node (and the device plugin its GPU);
// `gpuvc reserve` then records the GPU's UUID on the pod.
func (c *Controller) reservationPod(namespace, name string, team Team) *corev1.Pod {
	limits := corev1.ResourceList{corev1.ResourceName(contract.ResourceGPU): resource.MustParse("1")}
	for k, v := range c.opts.Resources {
		limits[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels: map[string]string{
				contract.LabelRole:       contract.RoleReservation,
				contract.LabelShareGroup: name,
				contract.LabelTeam:       team.Name,
			},
		},
		Spec: corev1.PodSpec{
			// Requests equal limits: extended resources require it, and a
			// Guaranteed pod is the last the kubelet evicts.
			Containers: []corev1.Container{{
				Name: "reserve", Image: c.opts.Image, Command: c.opts.Command,
				Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits.DeepCopy()},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				},
				// Restricted Pod Security: team namespaces may enforce it.
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					ReadOnlyRootFilesystem:   ptr.To(true),
				},
			}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			NodeSelector: map[string]string{contract.LabelPool: team.Pool},
			Tolerations: []corev1.Toleration{{
				Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: team.Pool, Effect: corev1.TaintEffectNoSchedule,
			}},
			ServiceAccountName: c.opts.ServiceAccountName,
			PriorityClassName:  c.opts.PriorityClassName,
			// The GPU is quota the team waits for: give it back quickly.
			TerminationGracePeriodSeconds: ptr.To[int64](2),
		},
	}
}

// quotaError is a reservation the team's ResourceQuota refused.
type quotaError struct{ detail string }

func (e *quotaError) Error() string { return e.detail }

// asQuotaError recognises ResourceQuota admission's refusal ("exceeded quota:
// <quota>, requested: ..., used: ..., limited: ...") and the webhook's refusal of
// a queueing team's reservation beyond its queue depth ("QueueFull: ..."), and
// keeps their numbers.
func asQuotaError(err error) (*quotaError, bool) {
	if !apierrors.IsForbidden(err) {
		return nil, false
	}
	msg := err.Error()
	for _, marker := range []string{"exceeded quota", contract.ReasonQueueFull + ":"} {
		if i := strings.Index(msg, marker); i >= 0 {
			return &quotaError{detail: msg[i:]}, true
		}
	}
	return nil, false
}

// createReservation creates a planned reservation pod and returns it as
// admitted. A quota refusal is returned as *quotaError.
func (c *Controller) createReservation(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	pod = pod.DeepCopy()
	err := c.opts.Client.Create(ctx, pod)
	if q, ok := asQuotaError(err); ok {
		return nil, q
	}
	if err != nil {
		return nil, fmt.Errorf("creating reservation pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if !holdsOneGPU(pod) {
		// An admission webhook changed the GPU request (e.g. a WholeGPUAs
		// policy mapped it to MIG): such a pod holds no whole GPU to share.
		_ = c.opts.Client.Delete(ctx, pod)
		return nil, fmt.Errorf("admission changed reservation %s/%s to request %v instead of %s: 1; exempt reservation pods from GPU mapping", pod.Namespace, pod.Name, pod.Spec.Containers[0].Resources.Limits, contract.ResourceGPU)
	}
	return pod, nil
}

func holdsOneGPU(p *corev1.Pod) bool {
	n := int64(0)
	for _, ctr := range p.Spec.Containers {
		for name, q := range ctr.Resources.Limits {
			if strings.HasPrefix(string(name), contract.NVIDIAPrefix) {
				if name != contract.ResourceGPU {
					return false
				}
				n += q.Value()
			}
		}
	}
	return n == 1
}

var errNoImage = errors.New("share controller: Options.Image (the gpuvc image reservation pods run) is required")
