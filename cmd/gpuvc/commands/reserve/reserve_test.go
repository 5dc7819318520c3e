package reserve

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli/clitest"
	"github.com/gpuvc/gpuvc/syncer/share/reserve"
)

func execute(t *testing.T, args ...string) error {
	t.Helper()
	var out bytes.Buffer
	cmd := NewCommand(cli.Streams{Out: &out, ErrOut: &out}, &cli.Globals{Kubeconfig: clitest.UnreachableKubeconfig(t)})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	return cmd.ExecuteContext(context.Background())
}

// unsetenv removes a variable for the test; t.Setenv restores it afterwards.
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

func TestReserveErrors(t *testing.T) {
	tests := map[string]struct {
		env  map[string]string
		args []string
		want []string
	}{
		"no pod identity": {env: map[string]string{reserve.PodNameEnv: "", reserve.PodNamespaceEnv: ""},
			want: []string{"POD_NAME", "POD_NAMESPACE", "downward API"}},
		"simulate without env": {env: map[string]string{reserve.PodNameEnv: "p", reserve.PodNamespaceEnv: "ns"},
			args: []string{"--simulate"}, want: []string{"NVIDIA_VISIBLE_DEVICES is not set"}},
		"simulate with two GPUs": {env: map[string]string{reserve.PodNameEnv: "p", reserve.PodNamespaceEnv: "ns", contract.EnvVisibleDevices: "GPU-a,GPU-b"},
			args: []string{"--simulate"}, want: []string{"names 2 GPUs", "exactly one"}},
		"simulate with all": {env: map[string]string{reserve.PodNameEnv: "p", reserve.PodNamespaceEnv: "ns", contract.EnvVisibleDevices: "all"},
			args: []string{"--simulate"}, want: []string{"NVIDIA_VISIBLE_DEVICES=all"}},
		"flags override env": {env: map[string]string{reserve.PodNameEnv: "", reserve.PodNamespaceEnv: ""},
			args: []string{"--simulate", "--pod-name=p", "--pod-namespace=ns"}, want: []string{"NVIDIA_VISIBLE_DEVICES is not set"}},
		"API server down": {env: map[string]string{reserve.PodNameEnv: "p", reserve.PodNamespaceEnv: "ns", contract.EnvVisibleDevices: "GPU-sim-1"},
			args: []string{"--simulate", "--api-wait=1s"}, want: []string{"could not be reached", "reading pod ns/p", "127.0.0.1:1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			unsetenv(t, contract.EnvVisibleDevices)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			err := execute(t, tc.args...)
			clitest.FailsSaying(t, err, tc.want...)
		})
	}
}

// Without --simulate on a machine without a driver the error says so and
// points at --simulate.
func TestReserveNoDriver(t *testing.T) {
	if ret := nvml.Init(); ret == nvml.SUCCESS {
		nvml.Shutdown()
		t.Skip("an NVIDIA driver is present")
	}
	t.Setenv(reserve.PodNameEnv, "p")
	t.Setenv(reserve.PodNamespaceEnv, "ns")
	unsetenv(t, contract.EnvVisibleDevices)
	err := execute(t)
	if err == nil {
		t.Fatal("command succeeded without a driver")
	}
	for _, w := range []string{"finding the reserved GPU", "NVIDIA driver not found", "names no simulated GPU", "gpuvc reserve --simulate"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}

	// A simulated GPU from the gpuvc device plugin is accepted without
	// --simulate: the command gets as far as reading its pod.
	t.Setenv(contract.EnvVisibleDevices, "GPU-sim-1")
	err = execute(t, "--api-wait=1s")
	if err == nil || !strings.Contains(err.Error(), "reading pod ns/p") {
		t.Errorf("error = %v, want it to reach the API server", err)
	}
}

// A GPU problem is reported before a missing API server configuration.
func TestReserveLocalErrorsFirst(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv(reserve.PodNameEnv, "p")
	t.Setenv(reserve.PodNamespaceEnv, "ns")
	t.Setenv(contract.EnvVisibleDevices, "void")
	cmd := NewCommand(cli.Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, &cli.Globals{})
	cmd.SetArgs([]string{"--simulate"})
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), `NVIDIA_VISIBLE_DEVICES="void" names no GPU`) {
		t.Errorf("error = %v, want the missing GPU", err)
	}
}
