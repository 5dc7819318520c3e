package trial

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/localstack"
)

// TestDevClusterWithRealNode: as root `gpuvc dev cluster up` starts the real
// node by default, so gpuvc installed with the values file it writes makes a
// team Ready with a kubeconfig that works, and a plain pod's DRA claim gets a
// GPU of the node agent's DRA driver; down leaves nothing.
func TestDevClusterWithRealNode(t *testing.T) {
	ctx, gpuvc := prepare(t, "the real node needs root; without root `gpuvc dev cluster up` runs kwok nodes only (tested in cmd/gpuvc/commands/dev)")
	dir := filepath.Join(t.TempDir(), "cluster")
	out, errOut, err := gpuvcbin.Run(ctx, gpuvc, "dev", "cluster", "up", "--dir", dir)
	t.Cleanup(func() {
		if _, errOut, err := gpuvcbin.Run(ctx, gpuvc, "dev", "cluster", "down", "--dir", dir); err != nil {
			t.Errorf("dev cluster down: %v\n%s", err, errOut)
		}
		nothingLeft(t, ctx, dir)
	})
	if err != nil {
		t.Fatalf("dev cluster up: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "system/system-0 (real)") || !strings.Contains(errOut, "a100/a100-0") {
		t.Errorf("up does not list the real node and the kwok nodes:\n%s", errOut)
	}
	kubeconfig := strings.TrimSpace(strings.TrimPrefix(out, "export KUBECONFIG="))
	host := func(args ...string) string {
		t.Helper()
		out, errOut, err := gpuvcbin.Run(ctx, gpuvc, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if err != nil {
			t.Fatalf("gpuvc %v: %v\n%s\n%s", args, err, out, errOut)
		}
		return out + errOut
	}
	draPodRuns(ctx, t, kubeconfig)
	agentExportsUtilization(ctx, t, dir)
	host("install", "-f", filepath.Join(dir, "values.yaml"), "--wait", "--timeout", "5m")
	t.Logf("team create --wait:\n%s", host("team", "create", "demo", "--pool", "system", "--gpus", "1", "--wait", "--timeout", "5m"))
	teamFile := filepath.Join(t.TempDir(), "demo.kubeconfig")
	host("team", "kubeconfig", "demo", "-f", teamFile)
	got, errOut, err := gpuvcbin.Run(ctx, localcp.Kubectl(t), "--kubeconfig", teamFile, "get", "namespaces", "--no-headers")
	if err != nil || !strings.Contains(got, "kube-system") {
		slices, _, _ := gpuvcbin.Run(ctx, localcp.Kubectl(t), "--kubeconfig", kubeconfig, "-n", "team-demo", "get", "endpointslices,pods", "-o", "wide")
		t.Errorf("the team kubeconfig does not work: %v\n%s%s\nthe team's host objects:\n%s", err, got, errOut, slices)
	}
}

// agentExportsUtilization: the node's GPU agent daemon serves the simulated
// GPUs' utilization its file sets (gpuvc agent --simulate-utilization), which the
// manager reads for spec.idle.gpuPods (docs/idle.md).
func agentExportsUtilization(ctx context.Context, t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, localnode.SetGPUUtilization(localstack.NodeDir(dir), map[string]int{"0": 42}))
	want := regexp.MustCompile(`(?m)^gpuvc_team_gpu_utilization\{[^}]*gpu="0"[^}]*\} 42$`)
	poll.UntilSeen(ctx, t, time.Minute, "the node agent exports GPU 0 at 42 %", func(ctx context.Context) (bool, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+localnode.GPUAgentMetricsAddress()+"/metrics", nil)
		if err != nil {
			return false, "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error(), nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err.Error(), nil
		}
		return want.Match(b), "no such sample", nil
	})
}

// draManifest is a plain host pod (no team) with a claim from a template of
// the simulated driver's whole-GPU class, printing what its container sees.
const draManifest = `apiVersion: v1
kind: Namespace
metadata: {name: dra-check}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: dra-check}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.nvidia.com}}]
---
apiVersion: v1
kind: Pod
metadata: {name: dra, namespace: dra-check}
spec:
  nodeSelector: {kubernetes.io/hostname: system-0}
  terminationGracePeriodSeconds: 1
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
  containers:
    - name: main
      image: ` + images.WorkloadRef + `
      imagePullPolicy: Never
      command: [/bin/sh, -c, 'echo visible=$NVIDIA_VISIBLE_DEVICES; exec sleep 3600']
      resources: {claims: [{name: gpu}]}
`

// draPodRuns: on the stack `dev cluster up` leaves, the node's GPU agent
// daemon prepares a claim's device (its CDI spec applied by containerd): the
// pod's container sees the UUID the node's ResourceSlice gives the
// allocated device.
func draPodRuns(ctx context.Context, t *testing.T, kubeconfig string) {
	t.Helper()
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, localcp.Kubectl(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	kubectl(draManifest, "apply", "-f", "-")
	kubectl("", "-n", "dra-check", "wait", "--for=condition=Ready", "pod/dra", "--timeout=2m")
	var claims struct {
		Items []resourceapi.ResourceClaim `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(kubectl("", "-n", "dra-check", "get", "resourceclaims", "-o", "json")), &claims))
	require.Len(t, claims.Items, 1)
	require.NotNil(t, claims.Items[0].Status.Allocation)
	device := claims.Items[0].Status.Allocation.Devices.Results[0].Device
	var slices struct {
		Items []resourceapi.ResourceSlice `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(kubectl("", "get", "resourceslices", "-o", "json")), &slices))
	uuid := ""
	for _, s := range slices.Items {
		for _, d := range s.Spec.Devices {
			if s.Spec.Pool.Name == "system-0" && d.Name == device {
				uuid = *d.Attributes["uuid"].StringValue
			}
		}
	}
	require.NotEmpty(t, uuid, "device %s is not in system-0's slice", device)
	require.Contains(t, kubectl("", "-n", "dra-check", "logs", "dra"), "visible="+uuid+"\n")
}
