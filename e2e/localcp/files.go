package localcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// recordKwokStages lists kwok's stage folder (in the module cache) in the
// manifest: kwok v0.8.0 has no built-in stages.
func recordKwokStages() error {
	modDir, err := moduleDir("sigs.k8s.io/kwok", localcluster.KwokVersion)
	if err != nil {
		return err
	}
	return localcluster.Record(nil, map[string]string{localcluster.FileKwokStages: filepath.Join(modDir, "kustomize", "stage")})
}

// recordImageFiles builds the pause program and lists it and vCluster's chart
// (in the module cache) in the manifest: the images of a real node need them.
func recordImageFiles(ctx context.Context) error {
	pause, err := BuildPause(ctx, images.DefaultDir())
	if err != nil {
		return err
	}
	chart, err := vclusterstest.ChartDir(ctx)
	if err != nil {
		return err
	}
	return localcluster.Record(nil, map[string]string{localcluster.FilePause: pause, localcluster.FileVClusterChart: chart})
}

// moduleDir returns where a module version lives in the module cache, downloading it
// if needed (the kwok build has normally fetched it already).
func moduleDir(module, version string) (string, error) {
	return moduleDirIn("kwok", module, version)
}

// moduleDirIn is moduleDir resolved in the wrapper module tools/<wrapper>, whose
// go.sum holds the module's checksum.
func moduleDirIn(wrapper, module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = filepath.Join(ToolsDir(), wrapper)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating %s@%s in the module cache: %w", module, version, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download gave no folder for %s@%s: %s", module, version, out)
	}
	return mod.Dir, nil
}
