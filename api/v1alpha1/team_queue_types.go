package v1alpha1

// Queueing makes a team's GPU quota elastic, on Kueue: spec.quota.gpus and
// spec.quota.mig become the team's guaranteed share (Kueue's nominal quota; an
// absent one guarantees nothing), GPU pods over what is free wait in a queue
// instead of being refused, a team may borrow what the other teams of its pool
// leave idle up to BorrowingLimit, and takes its guarantee back by preempting
// borrowers. Kueue admits at most the ceiling (guarantee plus borrowing limit);
// the namespace's ResourceQuota allows the ceiling plus MaxQueued, so pods beyond
// the ceiling wait instead of being refused, and a team cannot pile up unbounded
// pods. Only Kueue lifts a pod's admission gate, so the ceiling holds even when
// Kueue is down. The teams of one pool share one Kueue cohort.
type Queueing struct {
	// BorrowingLimit bounds what the team may use beyond its guarantee, borrowed
	// from idle guarantees of the other teams in its pool. Absent: nothing; a MIG
	// profile must be listed in spec.quota.mig (0 guaranteed is fine) to be borrowed.
	// +optional
	BorrowingLimit *GPUAmount `json:"borrowingLimit,omitempty"`

	// LendingLimit bounds how much of the team's idle guarantee other teams may
	// borrow; at most the guarantee. Absent: all of it.
	// +optional
	LendingLimit *GPUAmount `json:"lendingLimit,omitempty"`

	// Weight is the team's fair-share weight in its pool: idle capacity is shared
	// among borrowing teams in proportion to it; 0 borrows only what nobody else
	// wants. Default 1. In a pool that shares its GPUs by usage history (gpuvc
	// manager --usage-history-pool) it divides the team's decayed past use, so a
	// freed GPU goes to the team with the least use for its weight, and GPU time
	// follows the weights over time; there it must be at least 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight *int32 `json:"weight,omitempty"`

	// MaxQueued is how many GPUs (and MIG slices per profile) of pods may wait
	// in the queue beyond the ceiling: the ResourceQuota allows the team's pods,
	// running and waiting together, the ceiling (guarantee plus borrowing limit)
	// plus this; a pod beyond is refused. Absent, or a kind it leaves out: as
	// much as that kind's ceiling (a team may queue as much as it may run). A
	// MIG profile must be listed in spec.quota.mig.
	// +optional
	MaxQueued *GPUAmount `json:"maxQueued,omitempty"`

	// PriorityClasses are the Kueue WorkloadPriorityClasses the team's pods may
	// name with the label kueue.x-k8s.io/priority-class; gpuvc removes any
	// other (the class orders and preempts workloads in the pool's cohort, so
	// it is the platform's to give). Absent: none, every workload of the team
	// has Kueue's default priority or its pod's allowed priorityClassName.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClasses []string `json:"priorityClasses,omitempty"`
}

// GPUAmount is a number of whole GPUs and of MIG slices per profile.
//
// +kubebuilder:validation:XValidation:rule="!has(self.mig) || self.mig.all(p, self.mig[p] >= 0 && self.mig[p] <= 4096)",message="each MIG count must be between 0 and 4096"
type GPUAmount struct {
	// GPUs is a number of whole GPUs (nvidia.com/gpu).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	GPUs *int32 `json:"gpus,omitempty"`

	// MIG maps a MIG profile listed in spec.quota.mig to a number of slices.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	MIG map[string]int32 `json:"mig,omitempty"`
}

// Limits of spec.queueing; the CRD states the same numbers.
const MaxQueueWeight = 100

// DefaultQueueWeight is a team's fair-share weight when spec.queueing.weight is absent.
const DefaultQueueWeight = 1

// QueueWeight is the team's fair-share weight, defaulted.
func (q *Queueing) QueueWeight() int32 {
	if q == nil || q.Weight == nil {
		return DefaultQueueWeight
	}
	return *q.Weight
}

// GuaranteedGPUs is the whole GPUs the team is guaranteed under spec.queueing.
func (s *TeamSpec) GuaranteedGPUs() int32 { return deref(s.Quota.GPUs) }

// BorrowableGPUs is the whole GPUs the team may borrow beyond its guarantee.
func (s *TeamSpec) BorrowableGPUs() int32 {
	if s.Queueing == nil || s.Queueing.BorrowingLimit == nil {
		return 0
	}
	return deref(s.Queueing.BorrowingLimit.GPUs)
}

// BorrowableMIG is the slices of a MIG profile the team may borrow.
func (s *TeamSpec) BorrowableMIG(profile string) int32 {
	if s.Queueing == nil || s.Queueing.BorrowingLimit == nil {
		return 0
	}
	return s.Queueing.BorrowingLimit.MIG[profile]
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// CeilingQuota is the most the team's pods may run with: spec.quota, except
// that with spec.queueing the GPUs and each MIG profile are the guarantee plus
// the borrowing limit (absent counts 0). Kueue admits no more (its nominal quota
// and borrowing limit); it also bounds one pod (EffectiveMaxGPUsPerPod).
func (s *TeamSpec) CeilingQuota() Quota {
	q := s.Quota
	if s.Queueing == nil {
		return q
	}
	gpus := s.GuaranteedGPUs() + s.BorrowableGPUs()
	q.GPUs = &gpus
	if len(s.Quota.MIG) > 0 {
		q.MIG = make(map[string]int32, len(s.Quota.MIG))
		for p, n := range s.Quota.MIG {
			q.MIG[p] = n + s.BorrowableMIG(p)
		}
	}
	return q
}

// MaxQueuedGPUs is the whole GPUs of pods that may wait beyond the ceiling:
// spec.queueing.maxQueued.gpus, else the ceiling's GPUs.
func (s *TeamSpec) MaxQueuedGPUs() int32 {
	if q := s.Queueing; q != nil && q.MaxQueued != nil && q.MaxQueued.GPUs != nil {
		return *q.MaxQueued.GPUs
	}
	return s.GuaranteedGPUs() + s.BorrowableGPUs()
}

// MaxQueuedMIG is the slices of a MIG profile that may wait beyond the ceiling:
// spec.queueing.maxQueued.mig[profile], else the profile's ceiling.
func (s *TeamSpec) MaxQueuedMIG(profile string) int32 {
	if q := s.Queueing; q != nil && q.MaxQueued != nil {
		if n, ok := q.MaxQueued.MIG[profile]; ok {
			return n
		}
	}
	return s.Quota.MIG[profile] + s.BorrowableMIG(profile)
}

// HostQuota is what the namespace's ResourceQuota holds the team's pods to,
// running and waiting together: spec.quota, except that with spec.queueing the
// GPUs and each MIG profile are the ceiling plus what may wait beyond it. The
// ceiling itself is Kueue's to hold (only Kueue lifts a pod's admission gate).
func (s *TeamSpec) HostQuota() Quota {
	q := s.CeilingQuota()
	if s.Queueing == nil {
		return q
	}
	gpus := *q.GPUs + s.MaxQueuedGPUs()
	q.GPUs = &gpus
	for p, n := range q.MIG {
		q.MIG[p] = n + s.MaxQueuedMIG(p)
	}
	return q
}

// QueueStatus is the team's standing in Kueue (spec.queueing), from its
// ClusterQueue's status.
type QueueStatus struct {
	// ClusterQueue is the team's Kueue ClusterQueue; in a usage-history pool
	// the pool's, shared by its queueing teams (gpuvc-pool.<pool>), and the
	// figures below are then the team's own LocalQueue's.
	ClusterQueue string `json:"clusterQueue"`
	// GuaranteedGPUs and BorrowingLimitGPUs restate the spec for readers of the status.
	GuaranteedGPUs     int64 `json:"guaranteedGPUs"`
	BorrowingLimitGPUs int64 `json:"borrowingLimitGPUs"`
	// UsedGPUs are the whole GPUs Kueue reserved for the team's admitted pods;
	// BorrowedGPUs the part of them beyond the guarantee.
	UsedGPUs     int64 `json:"usedGPUs"`
	BorrowedGPUs int64 `json:"borrowedGPUs"`
	// AdmittedPods run on quota; QueuedPods wait for it.
	AdmittedPods int32 `json:"admittedPods"`
	QueuedPods   int32 `json:"queuedPods"`
	// WeightedShare is Kueue's fair-sharing measure of the team's borrowing: 0
	// at or below its guarantee, higher the more it borrows for its weight.
	// +optional
	WeightedShare int64 `json:"weightedShare,omitempty"`
	// Flavors is the standing per GPU kind: whole GPUs first, then each MIG
	// profile of spec.quota.mig.
	// +optional
	// +listType=map
	// +listMapKey=resource
	Flavors []QueueFlavorStatus `json:"flavors,omitempty"`
}

// QueueFlavorStatus is a team's standing in one GPU kind (a Kueue ResourceFlavor
// and its resource). All figures count devices: whole GPUs or MIG slices.
type QueueFlavorStatus struct {
	// Flavor is the pool's Kueue ResourceFlavor, e.g. gpuvc-a100-gpu.
	Flavor string `json:"flavor"`
	// Resource is nvidia.com/gpu or nvidia.com/mig-<profile>.
	Resource string `json:"resource"`
	// Guaranteed and BorrowingLimit restate the spec.
	Guaranteed     int64 `json:"guaranteed"`
	BorrowingLimit int64 `json:"borrowingLimit"`
	// Used is what Kueue reserved for the team's admitted pods; Borrowed the
	// part of it beyond the guarantee.
	Used     int64 `json:"used"`
	Borrowed int64 `json:"borrowed"`
	// Lent is the part of the team's idle, lendable guarantee that other teams
	// of the pool use now: what the cohort borrows, shared among its lenders in
	// proportion to the idle guarantee each could lend (docs/queueing.md).
	Lent int64 `json:"lent"`
	// Queued is what the team's waiting pods request.
	Queued int64 `json:"queued"`
}
