package nodeagent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/usage"
)

// Simulated GPUs on a node with a kubelet: ServeUtilization (what the local
// real node serves from a test process, and `gpuvc agent --simulate-utilization`
// registers) exports the utilization file's figures with the pods the
// pod-resources socket names; a GPU the file does not name has no utilization
// series, so the manager never finds its pod idle.
func TestServeSimulatedUtilization(t *testing.T) {
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 3, Seed: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	g := inv.GPUs
	dir := t.TempDir()
	socketDir, err := os.MkdirTemp("", "gpuvc-pr-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(socketDir) })
	socket := filepath.Join(socketDir, "kubelet.sock")
	serveOn(t, socket, &fakePodResources{pods: []*podresourcesv1.PodResources{
		{Name: "idle", Namespace: "team-fraud", Containers: []*podresourcesv1.ContainerResources{{Name: "main", Devices: devices("nvidia.com/gpu", g[0].UUID)}}},
		{Name: "busy", Namespace: "team-fraud", Containers: []*podresourcesv1.ContainerResources{{Name: "main", Devices: devices("nvidia.com/gpu", g[1].UUID)}}},
		{Name: "unmeasured", Namespace: "team-ads", Containers: []*podresourcesv1.ContainerResources{{Name: "main", Devices: devices("nvidia.com/gpu", g[2].UUID)}}},
	}})
	file := filepath.Join(dir, "gpu-utilization")
	if err := os.WriteFile(file, []byte(fmt.Sprintf("0 0\n%s 85\n", g[1].UUID)), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeUtilization(ctx, addr, "n0", socket, usage.Simulated{Inventory: inv, Path: file}.Read, logr.Discard())
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeUtilization: %v", err)
		}
	})

	var text string
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, err = get("http://" + addr + "/metrics")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`gpuvc_team_gpu_utilization{UUID="` + g[0].UUID + `",container="main",gpu="0",mig="false",namespace="team-fraud",node="n0",pod="idle",team="fraud"} 0`,
		`gpuvc_team_gpu_utilization{UUID="` + g[1].UUID + `",container="main",gpu="1",mig="false",namespace="team-fraud",node="n0",pod="busy",team="fraud"} 85`,
		`gpuvc_team_gpu_memory_total_bytes{UUID="` + g[2].UUID + `",container="main",gpu="2",mig="false",namespace="team-ads",node="n0",pod="unmeasured",team="ads"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s\n%s", want, text)
		}
	}
	if strings.Contains(text, `gpuvc_team_gpu_utilization{UUID="`+g[2].UUID) {
		t.Errorf("a GPU the file does not name reports utilization:\n%s", text)
	}
}

// serveOn serves f on a unix socket, as the kubelet does.
func serveOn(t *testing.T, socket string, f *fakePodResources) {
	t.Helper()
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, f)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
