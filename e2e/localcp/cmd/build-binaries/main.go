// Command build-binaries builds (once) and caches the binaries the local cluster
// runs — the control plane's, a real worker node's and those of vCluster's
// control-plane images — printing one progress line per build (N of M, elapsed,
// what is left), and lists them in the manifest that `gpuvc dev cluster` and the
// trial read. `make binaries` runs it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

func main() {
	if err := localcp.EnsureAll(context.Background(), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
