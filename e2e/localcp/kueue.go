package localcp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localkueue"
)

// kueueModule is Kueue's Go module; its zip ships config/components (CRDs,
// webhook configurations), which the local runner applies from the module cache.
const kueueModule = "sigs.k8s.io/kueue"

// kueueBuild builds Kueue's controller manager at the dependency versions Kueue
// pins (k8s.io v0.35, controller-runtime v0.23): a binary of its own, so gpuvc's
// newer k8s.io versions never meet it.
func kueueBuild() toolBuild {
	return toolBuild{
		name:     "kueue",
		version:  localcluster.KueueVersion,
		packages: []string{kueueModule + "/cmd/kueue"},
		ldflags:  "-s -w -X " + kueueModule + "/pkg/version.GitVersion=" + localcluster.KueueVersion,
	}
}

// EnsureKueue returns Kueue's controller manager and its config/components folder,
// building only Kueue (unless cached) and listing both in the manifest.
func EnsureKueue(ctx context.Context, log io.Writer) (binary, configDir string, err error) {
	if log == nil {
		log = io.Discard
	}
	dirs, err := ensureTools(ctx, []toolBuild{kueueBuild()}, newProgress(log, 1))
	if err != nil {
		return "", "", err
	}
	if err := recordKueueConfig(); err != nil {
		return "", "", err
	}
	return filepath.Join(dirs["kueue"], "kueue"), kueueConfigDir, nil
}

// kueueConfigDir is set by recordKueueConfig.
var kueueConfigDir string

// recordKueueConfig lists Kueue's config/components folder (in the module cache)
// in the manifest.
func recordKueueConfig() error {
	modDir, err := moduleDirIn("kueue", kueueModule, localcluster.KueueVersion)
	if err != nil {
		return err
	}
	dir := filepath.Join(modDir, "config", "components")
	if _, err := os.Stat(filepath.Join(dir, "crd", "bases")); err != nil {
		return fmt.Errorf("%s@%s ships no config/components/crd/bases: %w", kueueModule, localcluster.KueueVersion, err)
	}
	kueueConfigDir = dir
	return localcluster.Record(nil, map[string]string{localcluster.FileKueueConfig: dir})
}

// StartKueue builds Kueue (once, cached) and starts it against cp, its files
// under cp.Dir: a test package's setup calls it after RunTests started cp.
func StartKueue(ctx context.Context, cp *localcluster.ControlPlane, log io.Writer) (*localkueue.Kueue, error) {
	return StartKueueWith(ctx, cp, localkueue.Options{Log: log})
}

// StartKueueWith is StartKueue with more of localkueue's options (Binary,
// ConfigDir and Dir are filled in).
func StartKueueWith(ctx context.Context, cp *localcluster.ControlPlane, opts localkueue.Options) (*localkueue.Kueue, error) {
	log := opts.Log
	bin, configDir, err := EnsureKueue(ctx, log)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cp.Dir, "kueue")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	opts.Binary, opts.ConfigDir, opts.Dir = bin, configDir, dir
	return localkueue.Start(ctx, cp.Config, opts)
}
