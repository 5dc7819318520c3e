// Command build-binaries builds (once) and caches the binaries the tests run — the
// local control plane's, a real worker node's and those of vCluster's control-plane
// images — printing their paths; `make binaries` runs it so a test run shows build
// progress instead of a silent first test.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

func main() {
	ctx := context.Background()
	b, err := localcp.EnsureBinaries(ctx, os.Stderr)
	if err != nil {
		fail(err)
	}
	printPaths(b.Etcd, b.APIServer, b.ControllerManager, b.Scheduler, b.Kubectl, b.Kwok)
	n, err := localcp.EnsureNodeBinaries(ctx, os.Stderr)
	if err != nil {
		fail(err)
	}
	printPaths(n.Kubelet, n.KubeProxy, n.Containerd, n.ContainerdShim, n.Ctr, n.KubeRouter)
	i, err := localcp.EnsureImageBinaries(ctx, os.Stderr)
	if err != nil {
		fail(err)
	}
	printPaths(i.VCluster, i.Kine, i.CoreDNS)
}

func printPaths(paths ...string) {
	for _, p := range paths {
		fmt.Println(p)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}
