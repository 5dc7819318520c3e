package localcp

import (
	"context"
	"io"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// Names of the add-on builds in the manifest (one binary each, recorded under the
// build's name).
const (
	LocalPathProvisioner = localcluster.LocalPathProvisionerTool
	MetricsServer        = localcluster.MetricsServerTool
)

// addonBuilds are the builds of the host cluster's add-ons that a team's cluster
// relies on: a dynamic storage provisioner with the default StorageClass
// and the Metrics API (kind/localaddons): the provisioner runs as a host
// process beside the control plane, as kube-router and Kueue do, metrics-server
// as a pod from an image assembled in Go (images.MetricsServer). Both are pure
// Go; static like the other node binaries.
func addonBuilds() []toolBuild {
	return []toolBuild{
		{
			name:     LocalPathProvisioner,
			version:  localcluster.LocalPathProvisionerVersion,
			packages: []string{"github.com/rancher/local-path-provisioner"},
			ldflags:  "-s -w",
			env:      []string{"CGO_ENABLED=0"},
		},
		{
			name:     MetricsServer,
			version:  localcluster.MetricsServerVersion,
			packages: []string{"sigs.k8s.io/metrics-server/cmd/metrics-server"},
			ldflags:  "-s -w",
			env:      []string{"CGO_ENABLED=0"},
		},
	}
}

// AddonBinaries are the add-ons' executables.
type AddonBinaries struct {
	LocalPathProvisioner, MetricsServer string
}

// EnsureAddons returns the add-ons' binaries, building any that are not cached
// yet (like EnsureBinaries) and listing them in the manifest.
func EnsureAddons(ctx context.Context, log io.Writer) (*AddonBinaries, error) {
	dirs, err := ensureTools(ctx, addonBuilds(), newProgress(log, len(addonBuilds())))
	if err != nil {
		return nil, err
	}
	return &AddonBinaries{
		LocalPathProvisioner: filepath.Join(dirs[LocalPathProvisioner], exeName(addonBuilds()[0].packages[0])),
		MetricsServer:        filepath.Join(dirs[MetricsServer], exeName(addonBuilds()[1].packages[0])),
	}, nil
}
