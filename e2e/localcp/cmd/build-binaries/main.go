// Command build-binaries builds (once) and caches the local control plane's
// binaries, printing their paths; `make binaries` runs it so a test run shows build
// progress instead of a silent first test.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

func main() {
	b, err := localcp.EnsureBinaries(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	for _, p := range []string{b.Etcd, b.APIServer, b.ControllerManager, b.Scheduler, b.Kubectl, b.Kwok} {
		fmt.Println(p)
	}
}
