package charts

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

// host is the local control plane (etcd, kube-apiserver, controller-manager,
// scheduler, kwok GPU nodes) the integration tests install the chart on; nil under
// -short.
var host *localcp.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var err error
	host, err = localcp.Start(ctx, localcp.Options{Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer host.Stop()
	return m.Run()
}

func integration(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local control plane (run without -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}
