package nodeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
)

// Without a driver the agent says so and points at --simulate, before it
// asks for the API server's configuration: a local problem is the likelier
// one.
func TestRunNoDriverFirst(t *testing.T) {
	if ret := nvml.Init(); ret == nvml.SUCCESS {
		nvml.Shutdown()
		t.Skip("an NVIDIA driver is present")
	}
	asked := false
	err := Run(context.Background(), Options{NodeName: "n", Once: true, RESTConfig: func() (*rest.Config, error) {
		asked = true
		return nil, errors.New("no kubeconfig, not in a cluster")
	}})
	if err == nil {
		t.Fatal("the agent ran without a driver")
	}
	for _, w := range []string{"NVIDIA driver not found", "libnvidia-ml.so.1", "--simulate product="} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if asked {
		t.Error("the API server configuration was read before the GPUs")
	}
}

// The runtime check judges the simulated hardened configuration with
// SimulatedToolkit, else the ToolkitConfig files read under HostRoot.
func TestRuntimeJudge(t *testing.T) {
	root := t.TempDir()
	conf := "/etc/nvidia-container-runtime/config.toml"
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(conf)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, conf), []byte("accept-nvidia-visible-devices-envvar-when-unprivileged = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{HostRoot: root, ToolkitConfig: []string{conf}, DeviceListStrategy: "volume-mounts"}
	o.SimulatedToolkit = true
	if v := o.judge()(); !v.Safe || v.File != runtimeconfig.SimulatedPath || len(v.Warnings) > 0 {
		t.Errorf("simulated default: %+v", v)
	}
	o.SimulatedToolkit = false
	if v := o.judge()(); v.Safe || v.File != conf || v.Reason != runtimeconfig.ReasonEnvvarAccepted {
		t.Errorf("node file under the host root: %+v", v)
	}
}
