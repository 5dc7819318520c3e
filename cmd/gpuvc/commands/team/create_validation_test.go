package team_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// badCreates are the inputs a new user tried that the API accepted and then failed
// on for good; each must be refused before anything is created, naming the flag,
// the field and the value.
var badCreates = map[string]struct {
	args []string
	want []string
}{
	"capital letter":         {[]string{"Fraud"}, []string{"NAME: metadata.name", `"Fraud"`, "DNS-1035"}},
	"70 characters":          {[]string{strings.Repeat("a", 70)}, []string{"NAME: metadata.name", "has 70 characters", "at most 40"}},
	"dot":                    {[]string{"a.b"}, []string{"metadata.name", `"a.b"`, "DNS-1035"}},
	"leading digit":          {[]string{"9ml"}, []string{"metadata.name", `"9ml"`, "starting with a letter"}},
	"negative gpus":          {[]string{"x", "--gpus", "-3"}, []string{"--gpus: spec.quota.gpus", "-3", "between 0 and 4096"}},
	"negative cpu":           {[]string{"x", "--cpu=-4"}, []string{"--cpu: spec.quota.cpu", `"-4"`, "is negative"}},
	"negative memory":        {[]string{"x", "--memory=-1Gi"}, []string{"--memory: spec.quota.memory", `"-1Gi"`, "is negative"}},
	"impossible MIG":         {[]string{"x", "--mig", "9g.999gb=1"}, []string{"--mig: spec.quota.mig[9g.999gb]", "MIG profiles such as 1g.10gb"}},
	"MIG of no GPU":          {[]string{"x", "--mig", "1g.7gb=1"}, []string{"--mig: spec.quota.mig[1g.7gb]", "no known GPU model offers MIG profile 1g.7gb"}},
	"CIDR /33":               {[]string{"x", "--allow-egress", "10.0.0.0/33"}, []string{"--allow-egress: spec.network.allowedEgressCIDRs[0]", `"10.0.0.0/33"`}},
	"max per pod > quota":    {[]string{"x", "--gpus", "2", "--max-gpus-per-pod", "4"}, []string{"--max-gpus-per-pod: spec.maxGPUsPerPod", "cannot exceed spec.quota.gpus (2)"}},
	"idle GPUs too soon":     {[]string{"x", "--idle-gpu-after", "1m"}, []string{"--idle-gpu-after: spec.idle.gpuPods.after", `"1m0s"`, "between 5m0s and 720h0m0s"}},
	"sleep without vcluster": {[]string{"x", "--idle-gpu-after", "1h", "--idle-gpu-action", "Sleep"}, []string{"--idle-gpu-action: spec.idle.gpuPods.action", `"Sleep"`, "needs spec.idle.vcluster", "set spec.idle.vcluster.sleepAfter"}},
	"unknown idle action":    {[]string{"x", "--idle-gpu-after", "1h", "--idle-gpu-action", "Kill"}, []string{"--idle-gpu-action: spec.idle.gpuPods.action", `"Kill"`, "Sleep"}},
	"two errors, two flags":  {[]string{"x", "--gpus", "-3", "--cpu=-4"}, []string{"--gpus: spec.quota.gpus", "--cpu: spec.quota.cpu"}},
}

// TestCreateDryRunClientRefusesWhatTheAPIRefuses needs no cluster: the same rules
// as the CRD's run before any request.
func TestCreateDryRunClientRefusesWhatTheAPIRefuses(t *testing.T) {
	for name, tc := range badCreates {
		t.Run(name, func(t *testing.T) {
			r := gpuvc(t, append(append([]string{"team", "create"}, tc.args...), "--pool", "a100", "--dry-run=client")...)
			require.Equal(t, 1, r.code, r.out)
			require.Empty(t, r.out, "nothing printed as if it were valid")
			for _, w := range tc.want {
				require.Contains(t, r.errOut, w)
			}
		})
	}
}

// TestCreateRefusesBadInputAndCreatesNothing: with and without --dry-run, against
// the real API server, a bad team is refused and no Team exists afterwards.
func TestCreateRefusesBadInputAndCreatesNothing(t *testing.T) {
	ctx := integration(t)
	for name, tc := range badCreates {
		for _, mode := range []string{"--dry-run", "--wait"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				r := gpuvc(t, append(append([]string{"team", "create"}, tc.args...), "--pool", "a100", mode)...)
				require.Equal(t, 1, r.code, r.out)
				for _, w := range tc.want {
					require.Contains(t, r.errOut, w)
				}
			})
		}
	}
	c, err := teamctl.New(host.Config)
	require.NoError(t, err)
	teams, err := c.List(ctx)
	require.NoError(t, err)
	for _, item := range teams.Items {
		require.NotContains(t, []string{"x", "a.b", "9ml"}, item.Name, "a refused team was created")
	}
}

// TestCreateDryRunAsksTheServer: a bare --dry-run prints what the API server would
// store (its defaults applied) and stores nothing.
func TestCreateDryRunAsksTheServer(t *testing.T) {
	integration(t)
	r := gpuvc(t, "team", "create", "dryrun", "--pool", "a100", "--gpus", "1", "--fractions", "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	got := &gpuvcv1.Team{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(r.out), got))
	require.Equal(t, "baseline", got.Spec.PodSecurity, "the server's default")
	require.EqualValues(t, 8, got.Spec.GPUSharing.MaxPodsPerSharedGPU, "the server's default")
	require.Empty(t, got.ManagedFields)
	r = gpuvc(t, "team", "get", "dryrun")
	require.Equal(t, 1, r.code, "a dry run stored the team")
	require.Contains(t, r.errOut, "team dryrun: not found")
}

// TestCreateWarnsAboutPoolsThatCannotServeTheQuota: warnings, not refusals.
func TestCreateWarnsAboutPoolsThatCannotServeTheQuota(t *testing.T) {
	integration(t)
	r := gpuvc(t, "team", "create", "nopool", "--pool", "nopool", "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.errOut, "warning: team nopool: no node carries gpuvc.dev/pool=nopool (pools on this cluster: a100, h100")

	r = gpuvc(t, "team", "create", "h100mig", "--pool", "h100", "--mig", "1g.10gb=2", "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.errOut, "warning: team h100mig: no node of pool h100 offers MIG profile 1g.10gb (nvidia.com/mig-1g.10gb)")

	r = gpuvc(t, "team", "create", "a100mig", "--pool", "a100", "--mig", "1g.10gb=2", "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	require.NotContains(t, r.errOut, "warning", "pool a100 has MIG nodes with 1g.10gb")
}

func TestUnknownSubcommandsFail(t *testing.T) {
	for _, args := range [][]string{{"team", "foo"}, {"team", "lst"}, {"dev", "nope"}, {"nope"}} {
		r := gpuvc(t, args...)
		require.Equal(t, 1, r.code, "gpuvc %v", args)
		require.Contains(t, r.errOut, `unknown command "`+args[len(args)-1]+`"`)
	}
	r := gpuvc(t, "team", "lst")
	require.Contains(t, r.errOut, "Did you mean this?\n\tget\n\tlist")
	r = gpuvc(t, "team")
	require.Equal(t, 0, r.code, "a bare group prints its help")
	require.Contains(t, r.out, "Available Commands:")
}
