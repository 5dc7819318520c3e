package localnode

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/bringup"
)

func TestStartSteps(t *testing.T) {
	gpus := &inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 1}
	for name, tc := range map[string]struct {
		opts Options
		want []string
	}{
		"plain node, own slot": {Options{}, []string{
			"check the prerequisites", "take the machine's node slot", "record the node on the host", "create the cgroup root",
			"start containerd", "import the images", "check the sandbox image",
			"start the kubelet", "start kube-proxy", "wait for the node to be Ready", "wait for kube-proxy",
		}},
		"GPUs and NetworkPolicy on a slot held by the caller": {Options{Host: &Host{}, GPUs: gpus, NetworkPolicy: true}, []string{
			"check the prerequisites", "record the node on the host", "create the cgroup root",
			"start containerd", "import the images", "check the sandbox image", "serve the simulated GPUs",
			"start the kubelet", "start kube-proxy", "wait for the node to be Ready", "wait for the GPUs in the node's allocatable",
			"wait for kube-proxy", "start kube-router", "wait for kube-router",
		}},
		"GPUs partly served through DRA": {Options{Host: &Host{}, GPUs: &inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 2, DRA: 1}}, []string{
			"check the prerequisites", "record the node on the host", "create the cgroup root",
			"start containerd", "import the images", "check the sandbox image", "serve the simulated GPUs",
			"start the kubelet", "start kube-proxy", "wait for the node to be Ready", "wait for the GPUs in the node's allocatable",
			"wait for the DRA ResourceSlice of the simulated GPUs", "wait for kube-proxy",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			n := &Node{opts: tc.opts}
			if diff := cmp.Diff(tc.want, bringup.Names(n.steps())); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// Start stops at the first step when the prerequisites are missing, naming
// it, before it takes the machine's node slot.
func TestStartNamesTheFailingStep(t *testing.T) {
	_, err := Start(context.Background(), nil, nil, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "localnode: step 1 of 11, check the prerequisites: ") {
		t.Fatalf("error %v: want the prerequisites step named", err)
	}
}
