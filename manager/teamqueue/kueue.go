package teamqueue

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuvc/gpuvc/api/contract"
)

// GroupVersion is the Kueue API version gpuvc writes (Kueue v0.15 and later serve it).
var GroupVersion = schema.GroupVersion{Group: contract.KueueGroup, Version: contract.KueueAPIVersion}

// Kinds gpuvc writes.
var (
	ResourceFlavorKind = GroupVersion.WithKind("ResourceFlavor")
	ClusterQueueKind   = GroupVersion.WithKind("ClusterQueue")
	LocalQueueKind     = GroupVersion.WithKind("LocalQueue")
)

// The mirror types: the fields of Kueue's v1beta2 API that gpuvc sets, with
// Kueue's JSON names.

type resourceFlavorSpec struct {
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
}

type clusterQueueSpec struct {
	CohortName        string                `json:"cohortName"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
	QueueingStrategy  string                `json:"queueingStrategy"`
	ResourceGroups    []resourceGroup       `json:"resourceGroups"`
	Preemption        preemption            `json:"preemption"`
	FairSharing       fairSharing           `json:"fairSharing"`
	// AdmissionScope turns on Kueue's AdmissionFairSharing for the queue:
	// its LocalQueues' workloads are ordered by their decayed past usage.
	AdmissionScope *admissionScope `json:"admissionScope,omitempty"`
}

type admissionScope struct {
	AdmissionMode string `json:"admissionMode"`
}

type resourceGroup struct {
	CoveredResources []string       `json:"coveredResources"`
	Flavors          []flavorQuotas `json:"flavors"`
}

type flavorQuotas struct {
	Name      string          `json:"name"`
	Resources []resourceQuota `json:"resources"`
}

type resourceQuota struct {
	Name           string             `json:"name"`
	NominalQuota   resource.Quantity  `json:"nominalQuota"`
	BorrowingLimit *resource.Quantity `json:"borrowingLimit,omitempty"`
	LendingLimit   *resource.Quantity `json:"lendingLimit,omitempty"`
}

type preemption struct {
	ReclaimWithinCohort string             `json:"reclaimWithinCohort"`
	BorrowWithinCohort  borrowWithinCohort `json:"borrowWithinCohort"`
	WithinClusterQueue  string             `json:"withinClusterQueue"`
}

type borrowWithinCohort struct {
	Policy string `json:"policy"`
}

type fairSharing struct {
	Weight resource.Quantity `json:"weight"`
}

type localQueueSpec struct {
	ClusterQueue string `json:"clusterQueue"`
	// FairSharing is the LocalQueue's weight under AdmissionFairSharing
	// (usage-history pools only).
	FairSharing *fairSharing `json:"fairSharing,omitempty"`
}

// Kueue versions: MinKueueVersion is the first to serve GroupVersion;
// TestedKueueVersion is the one the tests run (kind/localcluster.KueueVersion).
const (
	MinKueueVersion    = contract.KueueMinVersion
	TestedKueueVersion = contract.KueueTestedVersion
)
