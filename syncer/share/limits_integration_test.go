package share_test

import (
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// A team with fraction limits: each share pod's ConfigMap — the environment of
// all its containers — carries HAMi-core's memory limit (its share of the
// node's 81920 MiB GPU minus the 256 MiB reserve) and SM percentage; a team
// without gets neither.
func TestFractionLimitsInTheEnvironment(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.Context(t, 3*time.Minute)
	limited := newTeam(ctx, t, "limited", 2)
	plain := newTeam(ctx, t, "plain", 2)

	createShare(ctx, t, limited, "half", "0.5")
	createPod(ctx, t, testobj.Pod("mem", limited).GPUMemory("20000").Obj())
	createShare(ctx, t, plain, "half", "0.5")
	for _, tc := range []struct {
		ns, name string
		env      map[string]string
	}{
		{limited, "half", map[string]string{contract.EnvCUDAMemoryLimit0: "40704m", contract.EnvCUDASMLimit: "50", contract.EnvGPUMemoryMiB: "40960"}},
		{limited, "mem", map[string]string{contract.EnvCUDAMemoryLimit0: "19744m", contract.EnvCUDASMLimit: "25", contract.EnvGPUMemoryMiB: "20000"}},
		{plain, "half", map[string]string{contract.EnvCUDAMemoryLimit0: "", contract.EnvCUDASMLimit: "", contract.EnvGPUMemoryMiB: "40960"}},
	} {
		key, wantEnv := tc.ns+"/"+tc.name, tc.env
		p := poll.Pod(ctx, t, env.cp.Client, tc.ns, tc.name, served)
		cm := configMap(ctx, t, p)
		for k, v := range wantEnv {
			if got, ok := cm.Data[k]; got != v || (v == "" && ok) {
				t.Errorf("%s: ConfigMap %s[%s]=%q (set %v), want %q", key, cm.Name, k, got, ok, v)
			}
		}
	}
}
