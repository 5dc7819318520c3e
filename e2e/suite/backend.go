package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kind/pkg/apis/config/defaults"
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
	// SystemNodeCommand runs a command in the network namespace of the system
	// node, where vCluster control planes run and team requests arrive (e.g.
	// iptables-save for kube-proxy's rules): this machine's for the real node,
	// the node's container on kind.
	SystemNodeCommand(ctx context.Context, name string, args ...string) (*exec.Cmd, error)
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

// dockerHasImage reports whether the Docker engine holds the image already.
func dockerHasImage(ref string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() == nil
}

// kindNodeImageEnv names the kind node image the kind backend creates its nodes
// from (e.g. one built offline by `go run ./e2e/kindnode/cmd/build-kind-node-image`,
// as `make e2e-kind` does); unset, kind's own.
const kindNodeImageEnv = "GPUVC_KIND_NODE_IMAGE"

// kindNodeImage is the node image the kind backend would use.
func kindNodeImage() string {
	if ref := os.Getenv(kindNodeImageEnv); ref != "" {
		return ref
	}
	return defaults.Image
}

// host is what the backend choice looks at, injectable for its unit test.
type host struct {
	env          func(string) string
	dockerAnswer func() bool
	hasImage     func(ref string) bool
	nodeImage    string
}

func thisHost() host {
	return host{env: os.Getenv, dockerAnswer: dockerAnswers, hasImage: dockerHasImage, nodeImage: kindNodeImage()}
}

// chooseBackend returns the backend GPUVC_E2E_BACKEND names — "kind", "local"
// (local control plane with a real node where this machine allows one, else kwok
// only) or "kwok" (local control plane, kwok nodes only). Without it, "kind" when
// a Docker engine answers and already holds the kind node image, else "local":
// an engine that cannot pull (no registry access) must not fail the suite on a
// pull, so a missing image is never pulled unless kind is asked for by name. why
// says what decided, for the log.
func chooseBackend(h host) (name, why string) {
	switch b := h.env("GPUVC_E2E_BACKEND"); b {
	case "kind", "kwok", "local":
		return b, "GPUVC_E2E_BACKEND=" + b
	}
	if !h.dockerAnswer() {
		return "local", "no Docker engine answers"
	}
	if !h.hasImage(h.nodeImage) {
		return "local", fmt.Sprintf("a Docker engine answers but holds no kind node image %s (build one offline with `go run ./e2e/kindnode/cmd/build-kind-node-image` "+
			"and set %s to it, `docker pull` it, or set GPUVC_E2E_BACKEND=kind to let kind pull it)", h.nodeImage, kindNodeImageEnv)
	}
	return "kind", fmt.Sprintf("a Docker engine answers and holds the kind node image %s", h.nodeImage)
}

// waitForVClusterKubeconfig waits until the team's vCluster has exported its
// kubeconfig Secret (vc-<team>) on the host.
func waitForVClusterKubeconfig(ctx context.Context, cs kubernetes.Interface, team string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Secrets("team-"+team).Get(ctx, "vc-"+team, metav1.GetOptions{})
		return err == nil, nil
	})
}
