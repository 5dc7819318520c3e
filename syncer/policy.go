package syncer

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// TeamPolicy is everything the webhook needs to know about one team. It does not
// depend on the Team API: the manager fills it from a Team, tests write it down.
type TeamPolicy struct {
	Team      string // e.g. "fraud"
	Namespace string // the team's host namespace, e.g. "team-fraud"

	// Pool is the node pool the team's pods are pinned to (nodes labelled and
	// tainted gpuvc.dev/pool=<Pool>).
	Pool string
	// PoolGPUProduct is the GPU Feature Discovery product of the pool's GPUs
	// (e.g. NVIDIA-A100-SXM4-80GB); MIG requests are mapped onto its profiles.
	PoolGPUProduct string
	// PoolGPUMemoryMiB bounds gpu-memory requests; 0 means unknown (no bound).
	PoolGPUMemoryMiB int64
	// SystemPool hosts the team's vCluster control plane; "" means "system".
	SystemPool string

	// MaxGPUsPerPod bounds the GPU devices (whole GPUs plus MIG instances) one
	// pod may request. 0 means the team may not request GPUs at all.
	MaxGPUsPerPod int64
	// AllowedMIGProfiles are the profiles the team may use, e.g. "1g.10gb"; they
	// should be profiles the pool's nodes advertise. Requests for a profile of
	// another GPU model are mapped to the smallest of these that fits.
	AllowedMIGProfiles []string
	// WholeGPUAs maps plain nvidia.com/gpu requests to a MIG profile ("" keeps
	// whole GPUs).
	WholeGPUAs string
	// FractionsEnabled lets pods use the gpu-fraction / gpu-memory annotations.
	FractionsEnabled bool

	// DRA lets the team's pods use ResourceClaims (spec.resourceClaims) and
	// the team's claims and claim templates exist in its namespace; false
	// refuses them all.
	DRA bool
	// AllowedDeviceClasses are the DeviceClasses the team's claims may name
	// (with DRA).
	AllowedDeviceClasses []string
	// GPUCeiling holds the team's whole GPUs (nvidia.com/gpu) and DRA devices
	// together, on the claims the webhook admits; 0: no ceiling (the team has
	// no GPU quota). ResourceQuota holds each resource alone.
	GPUCeiling int64

	// SchedulerName every workload pod gets ("" = default-scheduler).
	SchedulerName string
	// Queue is the KAI queue label every workload pod gets ("" = none: a
	// tenant's kai.scheduler/queue label is removed).
	Queue string
	// KueueQueue is the Kueue LocalQueue the team's GPU pods wait in ("" = the
	// team does not queue: a tenant's kueue.x-k8s.io/queue-name label is removed).
	KueueQueue string
	// KueueCeiling is, per GPU resource (nvidia.com/gpu, nvidia.com/mig-<profile>),
	// what a queueing team's pods may run with (guarantee plus borrowing limit);
	// KueueMaxQueued what may wait beyond it. The namespace's ResourceQuota
	// allows their sum; the webhook uses them to explain a pod beyond it.
	KueueCeiling, KueueMaxQueued map[corev1.ResourceName]int64
	// AllowedPriorityClasses may stay on workload pods; others are removed.
	// Include the cluster's globalDefault class if there is one.
	AllowedPriorityClasses []string
	// AllowedRuntimeClasses may stay on workload pods; others are removed.
	AllowedRuntimeClasses []string
	// AllowedKueuePriorityClasses are the WorkloadPriorityClasses a queueing
	// team's pods may name (label kueue.x-k8s.io/priority-class); others are
	// removed. None by default: the team's workloads get Kueue's default.
	AllowedKueuePriorityClasses []string
	// AllowedTolerations may stay on pods besides the pool's toleration and
	// Kubernetes' bounded not-ready/unreachable ones (compared by key,
	// operator, value and effect); every other toleration is removed.
	AllowedTolerations []corev1.Toleration

	// VClusterName is the name of the StatefulSet running the team's vCluster
	// control plane; its pods are pinned to SystemPool. "" exempts no pod.
	VClusterName string
}

// systemPool returns the pool control-plane pods go to.
func (p *TeamPolicy) systemPool() string {
	if p.SystemPool != "" {
		return p.SystemPool
	}
	return contract.DefaultSystemPool
}

func (p *TeamPolicy) schedulerName() string {
	if p.SchedulerName != "" {
		return p.SchedulerName
	}
	return contract.DefaultSchedulerName
}

func (p *TeamPolicy) migAllowed(profile string) bool {
	return slices.Contains(p.AllowedMIGProfiles, profile) || (p.WholeGPUAs != "" && p.WholeGPUAs == profile)
}

// ErrNotTeamNamespace is returned by a PolicySource for namespaces gpuvc does not
// manage; pods there are left alone.
var ErrNotTeamNamespace = errors.New("not a team namespace")

// PolicySource finds the policy of the team owning a host namespace.
type PolicySource interface {
	// TeamPolicy returns the namespace's policy, ErrNotTeamNamespace, or another
	// error (the request is then refused: failing closed).
	TeamPolicy(ctx context.Context, namespace string) (*TeamPolicy, error)
}
