package team

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fraudTeam() *gpuvcv1.Team {
	return &gpuvcv1.Team{
		ObjectMeta: metav1.ObjectMeta{Name: "fraud", Generation: 2, CreationTimestamp: metav1.NewTime(created)},
		Spec: gpuvcv1.TeamSpec{
			Pool:    "a100",
			Members: []gpuvcv1.Member{{Kind: "Group", Name: "fraud-ml"}, {Kind: "User", Name: "ana@example.com"}},
			Quota: gpuvcv1.Quota{
				GPUs: ptr.To[int32](6), MIG: map[string]int32{"3g.40gb": 2},
				CPU: ptr.To(resource.MustParse("128")), Memory: ptr.To(resource.MustParse("512Gi")), Pods: ptr.To[int32](300),
			},
			MaxGPUsPerPod: ptr.To[int32](4),
			GPUSharing:    &gpuvcv1.GPUSharing{Fractions: true, MaxPodsPerSharedGPU: 4, WholeGPUAs: "3g.40gb"},
			PodSecurity:   "restricted",
			Network:       &gpuvcv1.Network{DefaultDeny: ptr.To(true), AllowedEgressCIDRs: []string{"10.40.0.0/16"}},
		},
		Status: gpuvcv1.TeamStatus{
			ObservedGeneration: 2,
			Namespace:          "team-fraud",
			KubeconfigSecret:   "gpuvc-kubeconfig",
			GPUUsage:           &gpuvcv1.GPUUsage{GPUs: 2, MIG: map[string]int64{"3g.40gb": 1}},
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: "True", Reason: "Ready", Message: "all set", LastTransitionTime: metav1.NewTime(created)},
				{Type: "KubeconfigReady", Status: "True", Reason: "Exported", Message: "secret written", LastTransitionTime: metav1.NewTime(created)},
			},
		},
	}
}

// TestDescribeShowsEverythingAPlatformEngineerNeeds: quota and use of every
// resource, sharing, pod security, network, members, namespace, conditions with
// reasons and messages, and the command that fetches the kubeconfig.
func TestDescribeShowsEverythingAPlatformEngineerNeeds(t *testing.T) {
	var b bytes.Buffer
	describe(&b, fraudTeam(), created.Add(90*time.Minute))
	for _, want := range []string{
		"Name:        fraud\n",
		"Pool:        a100\n",
		"Namespace:   team-fraud\n",
		"Ready:       True\n",
		"Age:         90m\n",
		"Members:     Group:fraud-ml, User:ana@example.com\n",
		"  GPUs:      2/6 (used/quota)\n",
		"  MIG:       3g.40gb 1/2 (used/quota)\n",
		"  CPU:       128\n",
		"  Memory:    512Gi\n",
		"  Storage:   not limited\n",
		"  Pods:      300\n",
		"  Per pod:   at most 4 GPUs\n",
		"Sharing:     fractional GPUs, at most 4 pods per shared GPU; plain GPU requests get a 3g.40gb MIG slice\n",
		"PodSecurity: restricted\n",
		"Network:     default deny (only the team's own pods and DNS); extra egress to 10.40.0.0/16\n",
		"Kubeconfig:  secret team-fraud/gpuvc-kubeconfig; save it with: gpuvc team kubeconfig fraud -f fraud.kubeconfig\n",
	} {
		require.Contains(t, b.String(), want)
	}
	require.Regexp(t, `  KubeconfigReady\s+True\s+Exported\s+90m\s+secret written\n`, b.String())
}

func TestDescribeSaysWhyNoKubeconfigYet(t *testing.T) {
	tm := fraudTeam()
	tm.Generation = 3
	tm.Spec = gpuvcv1.TeamSpec{Pool: "h100"}
	tm.Status.Conditions = []metav1.Condition{
		{Type: "Ready", Status: "False", Reason: "VClusterNotReady", Message: "waiting for the control plane"},
		{Type: "KubeconfigReady", Status: "False", Reason: "VClusterNotReady", Message: "no server yet"},
	}
	var b bytes.Buffer
	describe(&b, tm, created)
	for _, want := range []string{
		"Ready:       False (VClusterNotReady; for spec generation 2; the manager has not yet acted on generation 3)\n",
		"  GPUs:      not limited\n",
		"  MIG:       none\n",
		"Sharing:     off: pods get whole GPUs\n",
		"PodSecurity: baseline (default)\n",
		"Network:     default deny (",
		"Kubeconfig:  not yet (VClusterNotReady: no server yet)\n",
	} {
		require.Contains(t, b.String(), want)
	}

	tm.DeletionTimestamp = ptr.To(metav1.NewTime(created))
	tm.Status.Conditions[0] = metav1.Condition{Type: "Ready", Status: "False", Reason: gpuvcv1.ReasonDeleting, Message: "namespace team-fraud is terminating: some resources are remaining: pods"}
	b.Reset()
	describe(&b, tm, created)
	require.Contains(t, b.String(), "Ready:       Deleting (Deleting: namespace team-fraud is terminating: some resources are remaining: pods; for spec generation 2;")

	tm.DeletionTimestamp = nil
	tm.Status = gpuvcv1.TeamStatus{}
	b.Reset()
	describe(&b, tm, created)
	require.Contains(t, b.String(), "Kubeconfig:  not yet (the manager has not reported it; is it running?)\n")
	require.Contains(t, b.String(), "(none yet: is the gpuvc manager running?)")
}

func TestDescribeShowsStorageClassLimits(t *testing.T) {
	tm := fraudTeam()
	tm.Spec.Quota.Storage = ptr.To(resource.MustParse("1Ti"))
	tm.Spec.Quota.StorageClasses = map[string]gpuvcv1.StorageClassQuota{
		"standard": {Storage: ptr.To(resource.MustParse("1Ti"))},
		"fast":     {Storage: ptr.To(resource.MustParse("100Gi")), Claims: ptr.To[int32](4)},
		"archive":  {Claims: ptr.To[int32](0)},
	}
	var b bytes.Buffer
	describe(&b, tm, created)
	require.Contains(t, b.String(), "  Storage:   1Ti\n    class archive: at most 0 claims\n    class fast: 100Gi in at most 4 claims\n    class standard: 1Ti\n")
}

// The DRA line: off by default, the default classes (gpu.nvidia.com, and
// mig.nvidia.com with a MIG quota), or the classes the spec lists.
func TestDescribeSaysWhichDeviceClasses(t *testing.T) {
	for name, tc := range map[string]struct {
		dra  *gpuvcv1.DRA
		mig  map[string]int32
		want string
	}{
		"off":                   {want: "DRA:         off: pods with resourceClaims are refused (spec.dra)\n"},
		"default":               {dra: &gpuvcv1.DRA{}, want: "DRA:         claims of gpu.nvidia.com (the default); each device counts as one GPU of the quota\n"},
		"default with MIG":      {dra: &gpuvcv1.DRA{}, mig: map[string]int32{"1g.10gb": 2}, want: "claims of gpu.nvidia.com, mig.nvidia.com (the default)"},
		"listed, sorted, as is": {dra: &gpuvcv1.DRA{DeviceClasses: []string{"gpu.example.com", "a.example.com"}}, want: "claims of a.example.com, gpu.example.com (spec.dra.deviceClasses)"},
	} {
		t.Run(name, func(t *testing.T) {
			tm := fraudTeam()
			tm.Spec.DRA, tm.Spec.Quota.MIG = tc.dra, tc.mig
			var b bytes.Buffer
			describe(&b, tm, created)
			require.Contains(t, b.String(), tc.want)
		})
	}
}
