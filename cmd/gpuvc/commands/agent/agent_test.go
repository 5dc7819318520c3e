package agent

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli/clitest"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, &cli.Globals{Kubeconfig: clitest.UnreachableKubeconfig(t)})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestAgentFlagErrors(t *testing.T) {
	t.Setenv(NodeNameEnv, "")
	tests := map[string]struct {
		args []string
		want []string
	}{
		"no node name": {[]string{"--once"}, []string{"no node name", "NODE_NAME"}},
		"simulate bad count": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=eight"},
			[]string{`--simulate "product=NVIDIA-A100-SXM4-80GB,count=eight"`, `count "eight"`}},
		"simulate unknown key": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1,gpus=2"},
			[]string{`unknown key "gpus"`}},
		"simulate bad layout": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1,mig=all-banana"},
			[]string{`"all-banana"`}},
		"simulate unknown product": {[]string{"--node-name=n", "--simulate=product=NVIDIA-T4,count=1"},
			[]string{`"NVIDIA-T4"`, "memory"}},
		"mig strategy":                 {[]string{"--node-name=n", "--mig-strategy=some"}, []string{`--mig-strategy "some"`}},
		"gfd mode":                     {[]string{"--node-name=n", "--gfd=maybe"}, []string{`--gfd`, `"maybe"`}},
		"interval":                     {[]string{"--node-name=n", "--interval=0s"}, []string{"--interval 0s must be positive"}},
		"device plugin needs simulate": {[]string{"--node-name=n", "--device-plugin"}, []string{"--device-plugin serves simulated GPUs only"}},
		"device plugin not mixed": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1", "--device-plugin", "--mig-strategy=single"},
			[]string{"--mig-strategy single"}},
		"device plugin not once": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1", "--device-plugin", "--once"},
			[]string{"drop --once"}},
		"dra needs simulate": {[]string{"--node-name=n", "--dra"}, []string{"--dra serves simulated GPUs only", "dra=<n>"}},
		"dra without DRA GPUs": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=2", "--dra"},
			[]string{"--dra", "hands no GPU to DRA", "add dra=<n>"}},
		"dra not once": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=2,dra=1", "--dra", "--once"},
			[]string{"--dra must keep running", "drop --once"}},
		"device plugin without its GPUs": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=2,dra=2", "--device-plugin", "--dra"},
			[]string{"--device-plugin", "every GPU to DRA (dra=2)"}},
		"arguments":          {[]string{"--node-name=n", "extra"}, []string{"unknown command"}},
		"gpu failure policy": {[]string{"--node-name=n", "--gpu-failure=drain"}, []string{"--gpu-failure", `"drain"`, "report, taint, cordon-drain", "off"}},
		"ignore xids":        {[]string{"--node-name=n", "--ignore-xids=48,x"}, []string{"--ignore-xids", `"x"`}},
		"gpu runtime policy": {[]string{"--node-name=n", "--gpu-runtime=taint"}, []string{"--gpu-runtime", `"taint"`, "fence, warn", "off"}},
		"inject without simulate": {[]string{"--node-name=n", "--inject-gpu-failures=/tmp/f"},
			[]string{"--inject-gpu-failures", "--simulate"}},
		"utilization without simulate": {[]string{"--node-name=n", "--simulate-utilization=/tmp/u", "--metrics-bind-address=:9402"},
			[]string{"--simulate-utilization", "--simulate"}},
		"utilization without metrics": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1", "--simulate-utilization=/tmp/u"},
			[]string{"--simulate-utilization", "--metrics-bind-address"}},
		"inject with health off": {[]string{"--node-name=n", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1", "--inject-gpu-failures=/tmp/f", "--gpu-failure=off"},
			[]string{"--inject-gpu-failures", "off"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := execute(t, tc.args...)
			clitest.FailsSaying(t, err, tc.want...)
		})
	}
}

// NODE_NAME is the default of --node-name.
func TestAgentNodeNameFromEnv(t *testing.T) {
	t.Setenv(NodeNameEnv, "gpu-node-7")
	cmd := NewCommand(cli.Streams{}, &cli.Globals{})
	if got := cmd.Flags().Lookup("node-name").DefValue; got != "gpu-node-7" {
		t.Errorf("--node-name default = %q, want $NODE_NAME", got)
	}
}

// The command reaches the API server its kubeconfig names: an unreachable one
// is named in the error (the simulated inventory is fine).
func TestAgentAPIServerDown(t *testing.T) {
	_, err := execute(t, "--node-name=n", "--once", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1")
	if err == nil || !strings.Contains(err.Error(), `reading node "n"`) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error = %v, want the failed node read naming the server", err)
	}
}

// The flags become the agent's options: --metrics-bind-address=0 serves no
// metrics; a simulated node judges its hardened toolkit configuration unless
// --nvidia-toolkit-config is given.
func TestAgentOptions(t *testing.T) {
	const sim = "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1"
	tests := map[string]struct {
		args []string
		want func(o nodeagent.Options) bool
	}{
		"metrics off by default": {[]string{"--node-name=n"}, func(o nodeagent.Options) bool { return o.MetricsAddr == "" }},
		"metrics address":        {[]string{"--node-name=n", "--metrics-bind-address=:9400"}, func(o nodeagent.Options) bool { return o.MetricsAddr == ":9400" }},
		"real GPUs": {[]string{"--node-name=n"}, func(o nodeagent.Options) bool {
			return o.Simulated == nil && !o.SimulatedToolkit && o.Health == nodeagent.HealthTaint && o.Runtime == nodeagent.RuntimeFence
		}},
		"simulated hardened toolkit": {[]string{"--node-name=n", sim}, func(o nodeagent.Options) bool {
			return o.Simulated != nil && o.Simulated.Count == 1 && o.Simulated.Seed == "" && o.SimulatedToolkit
		}},
		"simulated toolkit files": {[]string{"--node-name=n", sim, "--nvidia-toolkit-config=/c.toml", "--host-root=/host"}, func(o nodeagent.Options) bool {
			return !o.SimulatedToolkit && slices.Equal(o.ToolkitConfig, []string{"/c.toml"}) && o.HostRoot == "/host"
		}},
		"health and runtime off, XIDs": {[]string{"--node-name=n", "--gpu-failure=off", "--gpu-runtime=off", "--ignore-xids=48, 79"}, func(o nodeagent.Options) bool {
			return o.Health == "" && o.Runtime == "" && slices.Equal(o.IgnoreXIDs, []uint64{48, 79})
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &flags{}
			cmd := newCommand(cli.Streams{}, &cli.Globals{}, f)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := f.options(cmd.Flags())
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(got) {
				t.Errorf("options %+v", got)
			}
		})
	}
}
