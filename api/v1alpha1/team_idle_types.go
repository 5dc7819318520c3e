package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Idle is what the manager does with what a team leaves unused.
// +kubebuilder:validation:XValidation:rule="!has(self.gpuPods) || !has(self.gpuPods.action) || self.gpuPods.action != 'Sleep' || has(self.vcluster)",message="spec.idle.gpuPods.action: Sleep puts the team's vCluster to sleep and needs spec.idle.vcluster (its next connection wakes it); set spec.idle.vcluster.sleepAfter (e.g. 30m) or use action Evict"
type Idle struct {
	// VCluster puts the team's virtual cluster to sleep when nobody uses it: its
	// control plane is scaled to zero and wakes on the next connection to the
	// team's API address (the first request is slower, not refused).
	// +optional
	VCluster *VClusterIdle `json:"vcluster,omitempty"`

	// GPUPods acts on pods that hold GPUs without using them.
	// +optional
	GPUPods *GPUPodIdle `json:"gpuPods,omitempty"`
}

// VClusterIdle configures the sleep of a team's vCluster.
type VClusterIdle struct {
	// SleepAfter is how long the virtual cluster must go without team pods on the
	// host and without a new connection to its API server before it sleeps,
	// e.g. 30m. Between 5m and 720h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m') && duration(self) <= duration('720h')",messageExpression="'spec.idle.vcluster.sleepAfter: ' + self + ' is out of range; use a duration between 5m and 720h, e.g. 30m'"
	SleepAfter metav1.Duration `json:"sleepAfter"`
}

// GPUPodIdle configures what happens to pods whose GPUs stay idle.
type GPUPodIdle struct {
	// After is how long a pod's GPUs must stay below MaxUtilizationPercent before
	// Action is taken, e.g. 1h. Between 5m and 720h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m') && duration(self) <= duration('720h')",messageExpression="'spec.idle.gpuPods.after: ' + self + ' is out of range; use a duration between 5m and 720h, e.g. 1h'"
	After metav1.Duration `json:"after"`

	// Action: Notify (an event on the pod, which the team sees), Evict (the
	// event, then the pod is evicted so its GPUs go back to the quota) or Sleep
	// (the whole team: once every GPU pod of the team has been idle for After,
	// the team's pods are evicted and its vCluster is put to sleep at once;
	// until then an idle pod is only notified). Sleep needs spec.idle.vcluster.
	// +kubebuilder:default=Notify
	// +kubebuilder:validation:Enum=Notify;Evict;Sleep
	// +optional
	Action string `json:"action,omitempty"`

	// MaxUtilizationPercent is the GPU utilization at or below which a pod counts
	// as idle. Default 0: only a pod that does not use its GPUs at all.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxUtilizationPercent int32 `json:"maxUtilizationPercent,omitempty"`
}

// Idle actions on GPU pods (GPUPodIdle.Action).
const (
	IdleActionNotify = "Notify"
	IdleActionEvict  = "Evict"
	// IdleActionSleep acts on the whole team: see GPUPodIdle.Action.
	IdleActionSleep = "Sleep"
)

// ConditionAsleep is True while the team's vCluster control plane is scaled to
// zero by the idle policy; its reason says what the manager is doing (Awake,
// Drowsy, Asleep, Waking).
const ConditionAsleep = "Asleep"

// Reasons of the Asleep condition.
const (
	// ReasonAwake: the control plane runs; the message says why it stays awake.
	ReasonAwake = "Awake"
	// ReasonDrowsy: idle long enough to watch the API connections: the team's API
	// address goes through the manager, which counts new connections before sleep.
	ReasonDrowsy = "Drowsy"
	// ReasonAsleep: the control plane is scaled to zero; the next connection wakes it.
	ReasonAsleep = "Asleep"
	// ReasonWaking: a connection arrived; the control plane is starting.
	ReasonWaking = "Waking"
)

// Limits of the idle policy; the CRD's CEL rules say the same.
const (
	MinIdleDuration = 5 * time.Minute
	MaxIdleDuration = 720 * time.Hour
)

// IdleStatus is what the idle policy observed.
type IdleStatus struct {
	// LastActivity is when the manager last saw the team use its vCluster (a team
	// pod on the host, or a connection to its API address while the manager
	// watched it). Zero until the manager has seen one.
	// +optional
	LastActivity *metav1.Time `json:"lastActivity,omitempty"`
	// AsleepSince is when the control plane was scaled to zero; absent while awake.
	// +optional
	AsleepSince *metav1.Time `json:"asleepSince,omitempty"`
	// LastWake is how the last wake went: when it started and how long the first
	// connection waited for the control plane.
	// +optional
	LastWake *Wake `json:"lastWake,omitempty"`
}

// Wake is one wake of a sleeping vCluster.
type Wake struct {
	// At is when the waking connection arrived.
	At metav1.Time `json:"at"`
	// Latency is how long it waited for a ready control plane.
	Latency metav1.Duration `json:"latency"`
}
