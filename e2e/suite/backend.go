package suite

import (
	"context"
	"io"
	"os"
	"os/exec"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// logWriter receives the backends' progress and build output.
var logWriter io.Writer = os.Stderr

// Backend is a host cluster with gpuvc installed.
type Backend interface {
	Name() string
	// Kubeconfig is a cluster-admin kubeconfig of the host.
	Kubeconfig() string
	Config() *rest.Config
	Client() kubernetes.Interface
	// RunsContainers says whether pods really run (kind) or are only marked
	// Running by kwok (local); without containers no vCluster API server serves.
	RunsContainers() bool
	// ExportKubeconfig stands in for vCluster exporting a team's kubeconfig where
	// no vCluster runs; on a real backend it waits for vCluster to do it.
	ExportKubeconfig(ctx context.Context, team string) error
	Stop() error
}

// dockerAnswers reports whether a Docker engine (not just the CLI) is reachable.
func dockerAnswers() bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

// chooseBackend returns the backend GPUVC_E2E_BACKEND names — "kind", "local"
// (local control plane with a real node where this machine allows one, else kwok
// only) or "kwok" (local control plane, kwok nodes only) — and without it "kind"
// when a Docker engine answers, else "local".
func chooseBackend() string {
	switch b := os.Getenv("GPUVC_E2E_BACKEND"); b {
	case "kind", "kwok", "local":
		return b
	}
	if dockerAnswers() {
		return "kind"
	}
	return "local"
}

// waitForVClusterKubeconfig waits until the team's vCluster has exported its
// kubeconfig Secret (vc-<team>) on the host.
func waitForVClusterKubeconfig(ctx context.Context, cs kubernetes.Interface, team string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Secrets("team-"+team).Get(ctx, "vc-"+team, metav1.GetOptions{})
		return err == nil, nil
	})
}
