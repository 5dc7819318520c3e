// Command build-binaries builds (once) and caches the binaries the local cluster
// runs — the control plane's, a real worker node's and those of vCluster's
// control-plane images — printing one progress line per build (N of M, elapsed,
// what is left), and lists them in the manifest that `gpuvc dev cluster` and the
// trial read. `make binaries` runs it; `-only kueue` builds Kueue alone, `-only
// addons` the storage provisioner and metrics-server.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

func main() {
	only := flag.String("only", "", "build only these (kueue, or addons: local-path-provisioner and metrics-server); empty: everything")
	flag.Parse()
	build := localcp.EnsureAll
	switch *only {
	case "":
	case "kueue":
		build = func(ctx context.Context, log io.Writer) error {
			_, _, err := localcp.EnsureKueue(ctx, log)
			return err
		}
	case "addons":
		build = func(ctx context.Context, log io.Writer) error {
			_, err := localcp.EnsureAddons(ctx, log)
			return err
		}
	default:
		fmt.Fprintf(os.Stderr, "error: -only %q: want kueue, addons or nothing\n", *only)
		os.Exit(2)
	}
	if err := build(context.Background(), os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
