package teamclaims

import (
	"context"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ReasonHostRefused is the event reason when the host's answer names no
// gpuvc reason (e.g. the ResourceQuota's or the API server's own refusal).
const ReasonHostRefused = "HostRefused"

// gpuvcReason finds the reason gpuvc's fences start their messages with
// ("gpuvc: DeviceAllocationModeAll: ..."), in the webhook's and the CEL
// policies' answers alike.
var gpuvcReason = regexp.MustCompile(`gpuvc: ([A-Za-z]+): `)

// tell writes a Warning event on virtual object v of kind (ResourceClaim,
// ResourceClaimTemplate) with the host's refusal of its copy, unless this
// refusal was told already. `kubectl describe` and `kubectl get events` in
// the team's cluster show it.
func (s *Team) tell(ctx context.Context, kind string, v metav1.Object, refusal error) {
	msg := "gpuvc could not copy " + kind + " " + v.GetNamespace() + "/" + v.GetName() + " to the host, which answered: " + refusal.Error()
	s.mu.Lock()
	if s.told == nil {
		s.told = map[types.UID]string{}
	}
	if s.told[v.GetUID()] == msg {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	reason := ReasonHostRefused
	if m := gpuvcReason.FindStringSubmatch(refusal.Error()); m != nil {
		reason = m[1]
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: v.GetName() + ".", Namespace: v.GetNamespace()},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "resource.k8s.io/v1", Kind: kind,
			Namespace: v.GetNamespace(), Name: v.GetName(), UID: v.GetUID(),
		},
		Type: corev1.EventTypeWarning, Reason: reason, Action: "CopyToHost", Message: msg,
		Source:              corev1.EventSource{Component: "gpuvc"},
		ReportingController: "gpuvc.dev/manager",
		ReportingInstance:   "gpuvc-manager",
		FirstTimestamp:      now, LastTimestamp: now, Count: 1,
	}
	if _, err := s.Virtual.CoreV1().Events(v.GetNamespace()).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		log.FromContext(ctx).Error(err, "telling the team its copy was refused", "kind", kind, "namespace", v.GetNamespace(), "name", v.GetName(), "refusal", refusal.Error())
		return
	}
	s.mu.Lock()
	s.told[v.GetUID()] = msg
	s.mu.Unlock()
}

// forget drops what was told about v once its copy exists.
func (s *Team) forget(uid types.UID) {
	s.mu.Lock()
	delete(s.told, uid)
	s.mu.Unlock()
}
