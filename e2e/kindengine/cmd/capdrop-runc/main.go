// Command capdrop-runc is a runc for the test harness's own Docker engine (its
// daemon.json names it the default runtime): before handing over to runc it
// takes out of the container's OCI spec the capabilities this machine's bounding
// set cannot grant, so `docker run --privileged` — which kind always asks for —
// starts instead of failing with "unable to apply caps". Every argument goes to
// runc unchanged; the runc run is the one named by CAPDROP_RUNC, else runc on PATH.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/gpuvc/gpuvc/e2e/kindengine/capdrop"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "capdrop-runc:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	runc := os.Getenv("CAPDROP_RUNC")
	if runc == "" {
		p, err := exec.LookPath("runc")
		if err != nil {
			return err
		}
		runc = p
	}
	if path, process, ok := capdrop.SpecFile(args); ok {
		if err := dropIn(path, process); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return syscall.Exec(runc, append([]string{"runc"}, args...), os.Environ())
}

// dropIn rewrites the spec file without the capabilities the bounding set lacks.
func dropIn(path string, process bool) error {
	bnd, err := capdrop.BoundingSet()
	if err != nil {
		return err
	}
	missing := capdrop.Missing(bnd)
	if len(missing) == 0 {
		return nil
	}
	spec, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, changed, err := capdrop.Drop(spec, process, missing)
	if err != nil || !changed {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}
