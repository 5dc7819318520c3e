package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuvc/gpuvc/api/contract"
)

// DRAPath is where the webhook judges ResourceClaims, their status and
// ResourceClaimTemplates of team namespaces.
const DRAPath = "/gpuvc/v1/validate-dra"

// ClaimSpecs reads the claim specs a pod's spec.resourceClaims name.
type ClaimSpecs interface {
	// ClaimSpec returns the spec of the ResourceClaim, or of the claims the
	// ResourceClaimTemplate makes (kind KindResourceClaim or
	// KindResourceClaimTemplate) namespace/name; nil, nil when there is none.
	ClaimSpec(ctx context.Context, namespace, kind, name string) (*resourcev1.ResourceClaimSpec, error)
}

// ClientClaimSpecs reads them through a client (uncached in the manager: only
// spec.dra teams' pods with claims ask).
type ClientClaimSpecs struct{ Reader client.Reader }

// ClaimSpec implements ClaimSpecs.
func (c ClientClaimSpecs) ClaimSpec(ctx context.Context, namespace, kind, name string) (*resourcev1.ResourceClaimSpec, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	switch kind {
	case KindResourceClaim:
		var rc resourcev1.ResourceClaim
		if err := c.Reader.Get(ctx, key, &rc); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &rc.Spec, nil
	case KindResourceClaimTemplate:
		var t resourcev1.ResourceClaimTemplate
		if err := c.Reader.Get(ctx, key, &t); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &t.Spec.Spec, nil
	}
	return nil, nil
}

// DeviceUsage reads what a team namespace's ResourceQuota counts of whole GPUs
// and DRA devices.
type DeviceUsage interface {
	// DevicesUsed returns status.used of requests.nvidia.com/gpu plus
	// <class>.deviceclass.resource.k8s.io/devices of every class listed; -1
	// when the namespace has no quota.
	DevicesUsed(ctx context.Context, namespace string, classes []string) (int64, error)
}

// DevicesUsed implements DeviceUsage.
func (q ClientQuotaUsage) DevicesUsed(ctx context.Context, namespace string, classes []string) (int64, error) {
	var rq corev1.ResourceQuota
	if err := q.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: q.Name}, &rq); err != nil {
		if apierrors.IsNotFound(err) {
			return -1, nil
		}
		return 0, err
	}
	used := rq.Status.Used[corev1.ResourceName("requests."+contract.ResourceGPU)]
	n := used.Value()
	for _, c := range classes {
		d := rq.Status.Used[corev1.ResourceName(c+contract.DeviceClassQuotaSuffix)]
		n += d.Value()
	}
	return n, nil
}

// resolveClaims reads what a spec.dra team's new workload pod's claims name,
// and the team's device usage where a ceiling applies.
func (w *Webhook) resolveClaims(ctx context.Context, req admission.Request, in *Input) error {
	in.DevicesUsed = -1
	if req.Operation != admissionv1.Create || !in.Policy.DRA || in.Role == contract.RoleControlPlane {
		return nil
	}
	if len(in.Pod.Spec.ResourceClaims) > 0 {
		in.Claims = podClaimRefs(in.Pod)
		for i := range in.Claims {
			c := &in.Claims[i]
			if w.opts.Claims == nil || c.Kind == "" {
				continue
			}
			spec, err := w.opts.Claims.ClaimSpec(ctx, req.Namespace, c.Kind, c.Object)
			if err != nil {
				return fmt.Errorf("reading %s %s: %w", c.Kind, c.Object, err)
			}
			c.Spec = spec
		}
	}
	if in.Policy.GPUCeiling > 0 && w.opts.Devices != nil {
		n, err := w.opts.Devices.DevicesUsed(ctx, req.Namespace, in.Policy.AllowedDeviceClasses)
		if err != nil {
			return fmt.Errorf("reading the namespace's quota usage: %w", err)
		}
		in.DevicesUsed = n
	}
	return nil
}

// DRAValidator returns the validating handler of ResourceClaims, their status
// and ResourceClaimTemplates.
func (w *Webhook) DRAValidator() admission.Handler { return draValidator{w} }

type draValidator struct{ w *Webhook }

func (h draValidator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	if req.Kind.Group != "resource.k8s.io" {
		return admission.Allowed("not a DRA object")
	}
	policy, err := h.w.opts.Policies.TeamPolicy(ctx, req.Namespace)
	if errors.Is(err, ErrNotTeamNamespace) {
		return admission.Allowed("not a team namespace")
	}
	if err != nil {
		h.w.opts.Log.Error(err, "no team policy", "namespace", req.Namespace)
		return admission.Denied(fmt.Sprintf("gpuvc: %s: %v; DRA objects in this namespace are refused until the platform team fixes it", ReasonNoTeamPolicy, err))
	}
	var r Result
	switch {
	case req.Kind.Kind == KindResourceClaim && req.SubResource == "status" && req.Operation == admissionv1.Update:
		r, err = h.status(req, policy)
	case req.SubResource != "" || req.Operation != admissionv1.Create:
		return admission.Allowed("") // the spec is immutable; status is judged above
	case req.Kind.Kind == KindResourceClaim:
		r, err = h.claim(ctx, req, policy)
	case req.Kind.Kind == KindResourceClaimTemplate:
		var t resourcev1.ResourceClaimTemplate
		if err = json.Unmarshal(req.Object.Raw, &t); err == nil {
			r = RunClaimChecks(&ClaimInput{Policy: policy, Kind: KindResourceClaimTemplate, Name: t.Name, Path: "spec.spec", Spec: &t.Spec.Spec, DevicesUsed: -1})
		}
	default:
		return admission.Allowed("")
	}
	if err != nil {
		return admission.Errored(500, err)
	}
	op := strings.ToLower(string(req.Operation))
	if r.Denied() {
		h.w.opts.Metrics.observe(policy.Team, "validate-dra", op, "denied", start, r)
		return admission.Denied(r.Message())
	}
	h.w.opts.Metrics.observe(policy.Team, "validate-dra", op, "allowed", start, r)
	return admission.Allowed("")
}

func (h draValidator) claim(ctx context.Context, req admission.Request, policy *TeamPolicy) (Result, error) {
	var rc resourcev1.ResourceClaim
	if err := json.Unmarshal(req.Object.Raw, &rc); err != nil {
		return Result{}, err
	}
	in := &ClaimInput{Policy: policy, Kind: KindResourceClaim, Name: rc.Name, Path: "spec", Spec: &rc.Spec, DevicesUsed: -1}
	if rc.Name == "" {
		in.Name = rc.GenerateName + "*"
	}
	if policy.DRA && policy.GPUCeiling > 0 && h.w.opts.Devices != nil {
		n, err := h.w.opts.Devices.DevicesUsed(ctx, req.Namespace, policy.AllowedDeviceClasses)
		if err != nil {
			return Result{}, fmt.Errorf("reading the namespace's quota usage: %w", err)
		}
		in.DevicesUsed = n
	}
	return RunClaimChecks(in), nil
}

// status: a claim's allocation and reservations are the scheduler's (and the
// resource claim controller's) to write. vCluster's chart grants the team's
// syncer update on resourceclaims/status in the namespace, and a tenant's
// pods run as service accounts of the namespace: none of them may change
// either.
func (h draValidator) status(req admission.Request, policy *TeamPolicy) (Result, error) {
	if !strings.HasPrefix(req.UserInfo.Username, "system:serviceaccount:"+req.Namespace+":") {
		return Result{}, nil
	}
	var now, old resourcev1.ResourceClaim
	if err := json.Unmarshal(req.Object.Raw, &now); err != nil {
		return Result{}, err
	}
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return Result{}, err
	}
	var changed []string
	if !equality.Semantic.DeepEqual(now.Status.Allocation, old.Status.Allocation) {
		changed = append(changed, "status.allocation")
	}
	if !equality.Semantic.DeepEqual(now.Status.ReservedFor, old.Status.ReservedFor) {
		changed = append(changed, "status.reservedFor")
	}
	if len(changed) == 0 {
		return Result{}, nil
	}
	return Result{Denials: []Denial{{ReasonClaimStatusProtected, fmt.Sprintf(
		"%s of ResourceClaim %s written by %s, an identity of team %s's namespace (limit: allocations and reservations are written by the scheduler and the resource claim controller only); a tenant cannot pick its devices",
		strings.Join(changed, " and "), now.Name, req.UserInfo.Username, policy.Team)}}}, nil
}
