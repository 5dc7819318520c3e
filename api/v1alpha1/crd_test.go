package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

var teams dynamic.NamespaceableResourceInterface

// TestMain runs the tests against a real kube-apiserver with the Team CRD, so the
// schema and CEL rules are checked by the same code that checks them in a cluster.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{APIOnly: true}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		if err := charts.InstallCRDs(ctx, cp.Config); err != nil {
			return nil, err
		}
		client, err := dynamic.NewForConfig(cp.Config)
		if err != nil {
			return nil, err
		}
		teams = client.Resource(v1alpha1.GroupVersion.WithResource("teams"))
		return nil, nil
	}))
}

func createTeam(t *testing.T, manifest string) (*unstructured.Unstructured, error) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs a real kube-apiserver (run without -short)")
	}
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte("apiVersion: gpuvc.dev/v1alpha1\nkind: Team\n"+manifest), &obj.Object))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := teams.Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"})
	if err == nil {
		t.Cleanup(func() { _ = teams.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
	}
	return created, err
}

const validSpec = `
metadata: {name: fraud}
spec:
  pool: a100
  quota: {gpus: 4, mig: {1g.10gb: 4}, cpu: "64", memory: 256Gi, pods: 100}
  maxGPUsPerPod: 2
  gpuSharing: {fractions: true}
  members: [{kind: Group, name: fraud-ml}]
`

// Specs that must be accepted: optional fields absent in every combination the CEL
// rules look at.
func TestValidTeamsAreAccepted(t *testing.T) {
	for name, manifest := range validTeams {
		t.Run(name, func(t *testing.T) {
			_, err := createTeam(t, manifest)
			require.NoError(t, err)
		})
	}
}

var validTeams = map[string]string{
	"known MIG profiles, zero quantities": "metadata: {name: zeros}\nspec: {pool: a100, quota: {cpu: 0, memory: \"0\", mig: {7g.80gb: 1, 1g.10gb+me: 0}}}",
	"longest name":                        "metadata: {name: " + strings.Repeat("a", 39) + "z}\nspec: {pool: a100, quota: {}}",
	"full spec":                           validSpec,
	"storage per class":                   "metadata: {name: sc}\nspec: {pool: a100, quota: {storage: 1Ti, storageClasses: {standard: {storage: 1Ti}, fast-ssd: {storage: 100Gi, claims: 4}, archive.example.com: {claims: 0}}}}",
	"minimal":                             "metadata: {name: minimal}\nspec: {pool: a100, quota: {}}",
	"sharing without fractions":           "metadata: {name: mig-only}\nspec: {pool: a100, quota: {mig: {3g.40gb: 2}}, gpuSharing: {wholeGPUAs: 3g.40gb}}",
	"empty sharing":                       "metadata: {name: empty-sharing}\nspec: {pool: a100, quota: {}, gpuSharing: {}}",
	"max per pod without quota":           "metadata: {name: no-quota}\nspec: {pool: a100, quota: {}, maxGPUsPerPod: 2}",
	"network without CIDRs":               "metadata: {name: open}\nspec: {pool: a100, quota: {}, network: {defaultDeny: false}}",
	// 200 characters of 2 bytes: the CRD's maxLength counts characters (found by FuzzTeamValidation).
	"member name of multi-byte characters":           "metadata: {name: accents}\nspec: {pool: a100, quota: {}, members: [{kind: User, name: " + strings.Repeat("é", 200) + "}]}",
	"fraction limits":                                "metadata: {name: limited}\nspec: {pool: a100, quota: {gpus: 2}, gpuSharing: {fractions: true, fractionLimits: {enabled: true, reserveMiB: 512}}}",
	"allowed tolerations and Kueue priority classes": "metadata: {name: tolerant}\nspec: {pool: a100, quota: {gpus: 2}, placement: {allowedTolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, {key: example.com/maintenance, value: planned}]}, queueing: {priorityClasses: [team-batch, team.low]}}",
	"fraction limits off without fractions":          "metadata: {name: limits-off}\nspec: {pool: a100, quota: {gpus: 2}, gpuSharing: {fractionLimits: {enabled: false}}}",
	"idle policy at its limits":                      "metadata: {name: sleepy}\nspec: {pool: a100, quota: {}, idle: {vcluster: {sleepAfter: 5m}, gpuPods: {after: 720h, action: Evict, maxUtilizationPercent: 100}}}",
	"idle policy, whole-team sleep":                  "metadata: {name: sleepy3}\nspec: {pool: a100, quota: {}, idle: {vcluster: {sleepAfter: 30m}, gpuPods: {after: 1h, action: Sleep}}}",
	"idle policy, compound duration":                 "metadata: {name: sleepy2}\nspec: {pool: a100, quota: {}, idle: {vcluster: {sleepAfter: 1h30m0s}}}",
	"queueing, full":                                 "metadata: {name: elastic}\nspec: {pool: a100, quota: {gpus: 4, mig: {1g.10gb: 2, 3g.40gb: 0}}, queueing: {borrowingLimit: {gpus: 4, mig: {3g.40gb: 2}}, lendingLimit: {gpus: 4, mig: {1g.10gb: 1}}, weight: 3}}",
	"queueing, queue depth":                          "metadata: {name: deep}\nspec: {pool: a100, quota: {gpus: 2, mig: {1g.10gb: 0}}, queueing: {borrowingLimit: {gpus: 2}, maxQueued: {gpus: 16, mig: {1g.10gb: 4}}}}",
	"queueing, borrow only":                          "metadata: {name: borrower}\nspec: {pool: a100, quota: {}, queueing: {borrowingLimit: {gpus: 2}, weight: 0}}",
	"queueing, empty":                                "metadata: {name: queued}\nspec: {pool: a100, quota: {gpus: 2}, queueing: {}}",
	"dra, default classes":                           "metadata: {name: dra}\nspec: {pool: a100, quota: {gpus: 2}, dra: {}}",
	"dra, listed classes":                            "metadata: {name: dra-listed}\nspec: {pool: a100, quota: {gpus: 2}, dra: {deviceClasses: [gpu.nvidia.com, gpu.example.com]}}",
}

func TestValidTeamIsAcceptedWithDefaults(t *testing.T) {
	got, err := createTeam(t, validSpec)
	require.NoError(t, err)
	spec := got.Object["spec"].(map[string]any)
	require.Equal(t, "baseline", spec["podSecurity"], "podSecurity default")
	require.EqualValues(t, 8, spec["gpuSharing"].(map[string]any)["maxPodsPerSharedGPU"], "maxPodsPerSharedGPU default")
}

// TestInvalidTeamsAreRefused feeds the API server Team specs a platform engineer
// could plausibly get wrong; each must be refused with a message naming the field.
func TestInvalidTeamsAreRefused(t *testing.T) {
	for name, tc := range invalidTeams {
		t.Run(name, func(t *testing.T) {
			_, err := createTeam(t, tc.manifest)
			require.Error(t, err, "the API server accepted an invalid Team")
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// invalidTeams are Team specs a platform engineer could plausibly get wrong, with
// substrings the API server's refusal must contain; the first names the field.
var invalidTeams = map[string]struct {
	manifest string
	want     []string
}{
	"dra with queueing":                    {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {gpus: 2}, dra: {}, queueing: {}}", want: []string{"spec.dra: cannot be combined with spec.queueing", "Kueue v0.17.0"}},
	"dra class not a name":                 {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {gpus: 2}, dra: {deviceClasses: [GPU_All]}}", want: []string{"spec.dra.deviceClasses[0]"}},
	"wildcard toleration allowed":          {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {}, placement: {allowedTolerations: [{operator: Exists}]}}", want: []string{"spec.placement.allowedTolerations[0].key"}},
	"empty toleration key":                 {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {}, placement: {allowedTolerations: [{key: \"\", operator: Exists}]}}", want: []string{"spec.placement.allowedTolerations[0].key"}},
	"gpuvc health taint allowed":           {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {}, placement: {allowedTolerations: [{key: gpuvc.dev/gpu-unhealthy, operator: Exists}]}}", want: []string{"spec.placement.allowedTolerations", "gpuvc taint"}},
	"Exists with a value":                  {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {}, placement: {allowedTolerations: [{key: a, operator: Exists, value: b}]}}", want: []string{"spec.placement.allowedTolerations", "Exists takes no value"}},
	"toleration effect unknown":            {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {}, placement: {allowedTolerations: [{key: a, effect: Never}]}}", want: []string{"spec.placement.allowedTolerations[0].effect"}},
	"Kueue priority class not a name":      {manifest: "metadata: {name: w}\nspec: {pool: a100, quota: {gpus: 1}, queueing: {priorityClasses: [High]}}", want: []string{"spec.queueing.priorityClasses[0]"}},
	"sleep too soon":                       {manifest: "metadata: {name: nap}\nspec: {pool: a100, quota: {}, idle: {vcluster: {sleepAfter: 1m}}}", want: []string{"spec.idle.vcluster.sleepAfter", "out of range"}},
	"sleep too late":                       {manifest: "metadata: {name: nap}\nspec: {pool: a100, quota: {}, idle: {vcluster: {sleepAfter: 721h}}}", want: []string{"spec.idle.vcluster.sleepAfter", "out of range"}},
	"sleep not a duration":                 {manifest: "metadata: {name: nap}\nspec: {pool: a100, quota: {}, idle: {vcluster: {sleepAfter: soon}}}", want: []string{"spec.idle.vcluster.sleepAfter"}},
	"idle GPU pods too soon":               {manifest: "metadata: {name: nap}\nspec: {pool: a100, quota: {}, idle: {gpuPods: {after: 30s}}}", want: []string{"spec.idle.gpuPods.after", "out of range"}},
	"idle GPU pods action":                 {manifest: "metadata: {name: nap}\nspec: {pool: a100, quota: {}, idle: {gpuPods: {after: 1h, action: Kill}}}", want: []string{"spec.idle.gpuPods.action"}},
	"idle GPU pods sleep without vcluster": {manifest: "metadata: {name: nap}\nspec: {pool: a100, quota: {}, idle: {gpuPods: {after: 1h, action: Sleep}}}", want: []string{"spec.idle.gpuPods.action", "Sleep", "needs spec.idle.vcluster", "set spec.idle.vcluster.sleepAfter"}},
	"idle GPU pods percent":                {manifest: "metadata: {name: nap}\nspec: {pool: a100, quota: {}, idle: {gpuPods: {after: 1h, maxUtilizationPercent: 101}}}", want: []string{"spec.idle.gpuPods.maxUtilizationPercent"}},
	"name with a dot": {
		manifest: "metadata: {name: a.b}\nspec: {pool: a100, quota: {}}",
		want:     []string{"metadata.name", "a.b is not a DNS-1035 label"},
	},
	"name starting with a digit": {
		manifest: "metadata: {name: 9ml}\nspec: {pool: a100, quota: {}}",
		want:     []string{"metadata.name", "9ml is not a DNS-1035 label"},
	},
	"negative cpu":     {manifest: "metadata: {name: negcpu}\nspec: {pool: a100, quota: {cpu: -4}}", want: []string{"spec.quota.cpu", "-4 is negative"}},
	"negative memory":  {manifest: "metadata: {name: negmem}\nspec: {pool: a100, quota: {memory: -1Gi}}", want: []string{"spec.quota.memory", "-1Gi is negative"}},
	"negative storage": {manifest: "metadata: {name: negsto}\nspec: {pool: a100, quota: {storage: \"-1\"}}", want: []string{"spec.quota.storage", "is negative"}},
	"storage class not a name": {
		manifest: "metadata: {name: sc}\nspec: {pool: a100, quota: {storageClasses: {Fast_SSD: {claims: 1}}}}",
		want:     []string{"spec.quota.storageClasses", "keys are StorageClass names"},
	},
	"storage class limiting nothing": {
		manifest: "metadata: {name: sc}\nspec: {pool: a100, quota: {storageClasses: {standard: {}}}}",
		want:     []string{"spec.quota.storageClasses", "standard", "should have at least 1 properties"},
	},
	"storage class claims negative": {
		manifest: "metadata: {name: sc}\nspec: {pool: a100, quota: {storageClasses: {standard: {claims: -1}}}}",
		want:     []string{"spec.quota.storageClasses", "standard.claims", "greater than or equal to 0"},
	},
	"mig profile no GPU offers": {
		manifest: "metadata: {name: mig7}\nspec: {pool: a100, quota: {mig: {1g.7gb: 1, 1g.10gb: 1}}}",
		want:     []string{"spec.quota.mig", "no known GPU model offers this MIG profile; known profiles:", "3g.40gb"},
	},
	"egress prefix too long": {
		manifest: "metadata: {name: egress33}\nspec: {pool: a100, quota: {}, network: {allowedEgressCIDRs: [10.0.0.0/33]}}",
		want:     []string{"spec.network.allowedEgressCIDRs[0]", "must be a CIDR"},
	},
	"name too long": {
		manifest: "metadata: {name: " + strings.Repeat("a", 41) + "}\nspec: {pool: a100, quota: {gpus: 1}}",
		want:     []string{"metadata.name", "at most 40 characters"},
	},
	"no spec":          {manifest: "metadata: {name: nospec}", want: []string{"spec: Required"}},
	"no pool":          {manifest: "metadata: {name: nopool}\nspec: {quota: {gpus: 1}}", want: []string{"spec.pool: Required"}},
	"pool uppercase":   {manifest: "metadata: {name: upper}\nspec: {pool: A100, quota: {}}", want: []string{"spec.pool", "should match"}},
	"pool underscore":  {manifest: "metadata: {name: under}\nspec: {pool: a_100, quota: {}}", want: []string{"spec.pool"}},
	"no quota":         {manifest: "metadata: {name: noquota}\nspec: {pool: a100}", want: []string{"spec.quota: Required"}},
	"negative gpus":    {manifest: "metadata: {name: neg}\nspec: {pool: a100, quota: {gpus: -1}}", want: []string{"spec.quota.gpus", "greater than or equal to 0"}},
	"absurd gpus":      {manifest: "metadata: {name: absurd}\nspec: {pool: a100, quota: {gpus: 100000}}", want: []string{"spec.quota.gpus", "less than or equal to 4096"}},
	"gpus as string":   {manifest: "metadata: {name: str}\nspec: {pool: a100, quota: {gpus: four}}", want: []string{"spec.quota.gpus", "integer"}},
	"bad mig key":      {manifest: "metadata: {name: migkey}\nspec: {pool: a100, quota: {mig: {bogus: 1}}}", want: []string{"spec.quota.mig", "MIG profiles such as 1g.10gb"}},
	"8g mig profile":   {manifest: "metadata: {name: mig8}\nspec: {pool: a100, quota: {mig: {8g.80gb: 1}}}", want: []string{"spec.quota.mig"}},
	"negative mig":     {manifest: "metadata: {name: migneg}\nspec: {pool: a100, quota: {mig: {1g.10gb: -2}}}", want: []string{"spec.quota.mig", "between 0 and 4096"}},
	"cpu not quantity": {manifest: "metadata: {name: cpu}\nspec: {pool: a100, quota: {cpu: lots}}", want: []string{"spec.quota.cpu"}},
	"zero pods":        {manifest: "metadata: {name: pods}\nspec: {pool: a100, quota: {pods: 0}}", want: []string{"spec.quota.pods", "greater than or equal to 1"}},
	"maxGPUsPerPod zero": {
		manifest: "metadata: {name: max0}\nspec: {pool: a100, quota: {gpus: 2}, maxGPUsPerPod: 0}",
		want:     []string{"spec.maxGPUsPerPod", "greater than or equal to 1"},
	},
	"maxGPUsPerPod above quota": {
		manifest: "metadata: {name: maxq}\nspec: {pool: a100, quota: {gpus: 2}, maxGPUsPerPod: 4}",
		want:     []string{"spec.maxGPUsPerPod: cannot exceed spec.quota.gpus"},
	},
	"wholeGPUAs without MIG quota": {
		manifest: "metadata: {name: whole}\nspec: {pool: a100, quota: {gpus: 2}, gpuSharing: {wholeGPUAs: 3g.40gb}}",
		want:     []string{"spec.gpuSharing.wholeGPUAs", "needs a quota in spec.quota.mig"},
	},
	"wholeGPUAs not a profile": {
		manifest: "metadata: {name: whole2}\nspec: {pool: a100, quota: {mig: {3g.40gb: 1}}, gpuSharing: {wholeGPUAs: 3g}}",
		want:     []string{"spec.gpuSharing.wholeGPUAs", "should match"},
	},
	"fractions without GPUs": {
		manifest: "metadata: {name: frac}\nspec: {pool: a100, quota: {mig: {1g.10gb: 2}}, gpuSharing: {fractions: true}}",
		want:     []string{"spec.gpuSharing.fractions", "spec.quota.gpus to at least 1"},
	},
	"fraction limits without fractions": {
		manifest: "metadata: {name: limits}\nspec: {pool: a100, quota: {gpus: 1}, gpuSharing: {fractionLimits: {enabled: true}}}",
		want:     []string{"spec.gpuSharing.fractionLimits", "set spec.gpuSharing.fractions: true"},
	},
	"fraction reserve too large": {
		manifest: "metadata: {name: reserve}\nspec: {pool: a100, quota: {gpus: 1}, gpuSharing: {fractions: true, fractionLimits: {enabled: true, reserveMiB: 20000}}}",
		want:     []string{"spec.gpuSharing.fractionLimits.reserveMiB", "between 0 and 16384"},
	},
	"fraction reserve negative": {
		manifest: "metadata: {name: reserve-neg}\nspec: {pool: a100, quota: {gpus: 1}, gpuSharing: {fractions: true, fractionLimits: {enabled: true, reserveMiB: -1}}}",
		want:     []string{"spec.gpuSharing.fractionLimits.reserveMiB", "between 0 and 16384"},
	},
	"one pod per shared GPU": {
		manifest: "metadata: {name: share1}\nspec: {pool: a100, quota: {gpus: 1}, gpuSharing: {fractions: true, maxPodsPerSharedGPU: 1}}",
		want:     []string{"spec.gpuSharing.maxPodsPerSharedGPU", "greater than or equal to 2"},
	},
	"too many pods per shared GPU": {
		manifest: "metadata: {name: share99}\nspec: {pool: a100, quota: {gpus: 1}, gpuSharing: {fractions: true, maxPodsPerSharedGPU: 99}}",
		want:     []string{"spec.gpuSharing.maxPodsPerSharedGPU", "less than or equal to 48"},
	},
	"unknown pod security level": {
		manifest: "metadata: {name: psa}\nspec: {pool: a100, quota: {}, podSecurity: strict}",
		want:     []string{"spec.podSecurity", "Unsupported value"},
	},
	"member kind": {
		manifest: "metadata: {name: member}\nspec: {pool: a100, quota: {}, members: [{kind: Robot, name: r2}]}",
		want:     []string{"spec.members[0].kind", "Unsupported value"},
	},
	"member without name": {
		manifest: "metadata: {name: member2}\nspec: {pool: a100, quota: {}, members: [{kind: User, name: \"\"}]}",
		want:     []string{"spec.members[0].name"},
	},
	"duplicate member": {
		manifest: "metadata: {name: member3}\nspec: {pool: a100, quota: {}, members: [{kind: User, name: ana}, {kind: User, name: ana}]}",
		want:     []string{"spec.members[1]", "Duplicate value"},
	},
	"lending more GPUs than guaranteed": {
		manifest: "metadata: {name: lend}\nspec: {pool: a100, quota: {gpus: 2}, queueing: {lendingLimit: {gpus: 3}}}",
		want:     []string{"spec.queueing.lendingLimit.gpus: cannot exceed the guarantee spec.quota.gpus"},
	},
	"lending GPUs without a guarantee": {
		manifest: "metadata: {name: lend0}\nspec: {pool: a100, quota: {}, queueing: {lendingLimit: {gpus: 1}}}",
		want:     []string{"spec.queueing.lendingLimit.gpus: cannot exceed the guarantee"},
	},
	"lending more MIG slices than guaranteed": {
		manifest: "metadata: {name: lendmig}\nspec: {pool: a100, quota: {mig: {1g.10gb: 1}}, queueing: {lendingLimit: {mig: {1g.10gb: 2}}}}",
		want:     []string{"spec.queueing.lendingLimit.mig: each profile must be listed in spec.quota.mig"},
	},
	"borrowing a MIG profile not in the quota": {
		manifest: "metadata: {name: borrowmig}\nspec: {pool: a100, quota: {gpus: 1}, queueing: {borrowingLimit: {mig: {3g.40gb: 1}}}}",
		want:     []string{"spec.queueing.borrowingLimit.mig: a MIG profile can be borrowed only if spec.quota.mig lists it"},
	},
	"queueing a MIG profile not in the quota": {
		manifest: "metadata: {name: queuemig}\nspec: {pool: a100, quota: {gpus: 1}, queueing: {maxQueued: {mig: {3g.40gb: 1}}}}",
		want:     []string{"spec.queueing.maxQueued.mig: a MIG profile can queue only if spec.quota.mig lists it"},
	},
	"negative queue depth": {
		manifest: "metadata: {name: queueneg}\nspec: {pool: a100, quota: {gpus: 1}, queueing: {maxQueued: {gpus: -1}}}",
		want:     []string{"spec.queueing.maxQueued.gpus", "greater than or equal to 0"},
	},
	"queue depth too high": {
		manifest: "metadata: {name: queuehigh}\nspec: {pool: a100, quota: {gpus: 1}, queueing: {maxQueued: {gpus: 5000}}}",
		want:     []string{"spec.queueing.maxQueued.gpus", "less than or equal to 4096"},
	},
	"negative borrowing": {
		manifest: "metadata: {name: borrowneg}\nspec: {pool: a100, quota: {gpus: 1}, queueing: {borrowingLimit: {gpus: -1}}}",
		want:     []string{"spec.queueing.borrowingLimit.gpus", "greater than or equal to 0"},
	},
	"negative MIG borrowing": {
		manifest: "metadata: {name: borrowmigneg}\nspec: {pool: a100, quota: {mig: {1g.10gb: 1}}, queueing: {borrowingLimit: {mig: {1g.10gb: -1}}}}",
		want:     []string{"spec.queueing.borrowingLimit", "each MIG count must be between 0 and 4096"},
	},
	"weight too high": {
		manifest: "metadata: {name: heavy}\nspec: {pool: a100, quota: {gpus: 1}, queueing: {weight: 101}}",
		want:     []string{"spec.queueing.weight", "less than or equal to 100"},
	},
	"egress not a CIDR": {
		manifest: "metadata: {name: egress}\nspec: {pool: a100, quota: {}, network: {allowedEgressCIDRs: [10.0.0.1]}}",
		want:     []string{"spec.network.allowedEgressCIDRs[0]", "must be a CIDR"},
	},
	"chart version latest": {
		manifest: "metadata: {name: chart}\nspec: {pool: a100, quota: {}, vcluster: {chartVersion: latest}}",
		want:     []string{"spec.vcluster.chartVersion", "should match"},
	},
	"unknown field": {
		manifest: "metadata: {name: unknown}\nspec: {pool: a100, quota: {}, gpus: 4}",
		want:     []string{`unknown field "spec.gpus"`},
	},
}
