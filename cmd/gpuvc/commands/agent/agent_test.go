package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli/clitest"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
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
		"arguments":          {[]string{"--node-name=n", "extra"}, []string{"unknown command"}},
		"gpu failure policy": {[]string{"--node-name=n", "--gpu-failure=drain"}, []string{"--gpu-failure", `"drain"`, "report, taint, cordon-drain", "off"}},
		"ignore xids":        {[]string{"--node-name=n", "--ignore-xids=48,x"}, []string{"--ignore-xids", `"x"`}},
		"gpu runtime policy": {[]string{"--node-name=n", "--gpu-runtime=taint"}, []string{"--gpu-runtime", `"taint"`, "fence, warn", "off"}},
		"inject without simulate": {[]string{"--node-name=n", "--inject-gpu-failures=/tmp/f"},
			[]string{"--inject-gpu-failures", "--simulate"}},
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

// Without a driver the agent says so and points at --simulate; it fails
// before any API call (the kubeconfig's server does not exist).
func TestAgentNoDriver(t *testing.T) {
	if ret := nvml.Init(); ret == nvml.SUCCESS {
		nvml.Shutdown()
		t.Skip("an NVIDIA driver is present")
	}
	_, err := execute(t, "--node-name=n", "--once")
	if err == nil {
		t.Fatal("command succeeded without a driver")
	}
	for _, w := range []string{"NVIDIA driver not found", "libnvidia-ml.so.1", "--simulate product="} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// An unreachable API server is named in the error (the inventory is fine).
func TestAgentAPIServerDown(t *testing.T) {
	_, err := execute(t, "--node-name=n", "--once", "--simulate=product=NVIDIA-A100-SXM4-80GB,count=1")
	if err == nil || !strings.Contains(err.Error(), `reading node "n"`) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("error = %v, want the failed node read naming the server", err)
	}
}

// A missing driver is reported before a missing API server configuration.
func TestAgentLocalErrorsFirst(t *testing.T) {
	if ret := nvml.Init(); ret == nvml.SUCCESS {
		nvml.Shutdown()
		t.Skip("an NVIDIA driver is present")
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cmd := NewCommand(cli.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, &cli.Globals{})
	cmd.SetArgs([]string{"--node-name=n"})
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "NVIDIA driver not found") {
		t.Errorf("error = %v, want the missing driver", err)
	}
}

// The runtime check judges the simulated hardened configuration on simulated
// nodes unless --nvidia-toolkit-config names files, which are then read under
// --host-root.
func TestAgentRuntimeJudge(t *testing.T) {
	root := t.TempDir()
	conf := "/etc/nvidia-container-runtime/config.toml"
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(conf)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, conf), []byte("accept-nvidia-visible-devices-envvar-when-unprivileged = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &flags{hostRoot: root, toolkitConfig: []string{conf}, deviceStrategy: "volume-mounts"}
	if v := f.judge(true)(); !v.Safe || v.File != runtimeconfig.SimulatedPath || len(v.Warnings) > 0 {
		t.Errorf("simulated default: %+v", v)
	}
	if v := f.judge(false)(); v.Safe || v.File != conf || v.Reason != runtimeconfig.ReasonEnvvarAccepted {
		t.Errorf("node file under the host root: %+v", v)
	}
}
