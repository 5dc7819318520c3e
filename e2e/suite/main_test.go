package suite

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/kind/localstack"
)

var (
	backend  Backend
	gpuvcBin string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "gpuvc-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if gpuvcBin, err = gpuvcbin.Build(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	choice, why := chooseBackend(thisHost())
	switch choice {
	case "kind":
		fmt.Fprintf(os.Stderr, "e2e: kind backend (%s); GPUVC_E2E_BACKEND=local runs the local control plane instead\n", why)
		backend, err = startKind(ctx, gpuvcBin)
	case "kwok":
		fmt.Fprintln(os.Stderr, "e2e: GPUVC_E2E_BACKEND=kwok: local control plane with kwok nodes only; checks that need running containers skip")
		backend, err = startLocal(ctx, gpuvcBin)
	default:
		fmt.Fprintf(os.Stderr, "e2e: local backend (%s)\n", why)
		if why := localstack.RealNodeUnavailable(); why != "" {
			fmt.Fprintf(os.Stderr, "e2e: no real node here (%s): local control plane with kwok nodes only; checks that need running containers skip\n", why)
			backend, err = startLocal(ctx, gpuvcBin)
		} else {
			fmt.Fprintln(os.Stderr, "e2e: local control plane with a real node (kubelet, containerd, runc) and kwok GPU nodes")
			backend, err = startReal(ctx, gpuvcBin)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the backend:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: backend %s\n", backend.Name())
	code := m.Run()
	if err := backend.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the backend:", err)
		code = 1
	}
	return code
}

// result of one gpuvc invocation.
type result struct {
	out, errOut string
	code        int
}

// gpuvc runs the built binary against the backend, as a platform engineer would.
func gpuvc(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gpuvcBin, append([]string{"--kubeconfig", backend.Kubeconfig()}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running gpuvc %s: %v", strings.Join(args, " "), err)
	}
	return result{out: out.String(), errOut: errOut.String(), code: code}
}

func e2e(t *testing.T) context.Context {
	t.Helper()
	return e2eWithin(t, 5*time.Minute)
}

// e2eWithin is e2e for a test that needs longer than five minutes.
func e2eWithin(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test (run without -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
