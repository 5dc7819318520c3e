package localstack

import (
	"context"
	"io"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// AddonsDir holds the storage provisioner's and metrics-server's logs and pid
// files, and the volumes of every PersistentVolumeClaim.
func AddonsDir(dir string) string { return filepath.Join(dir, "addons") }

// startAddons starts, detached, the default StorageClass's provisioner and the
// Metrics API on the real node (kind/localaddons).
func (s *Stack) startAddons(ctx context.Context, dir string, log io.Writer) error {
	_, err := localaddons.Start(ctx, s.ControlPlane, localaddons.Options{
		Dir: AddonsDir(dir), Node: RealNodeName, HelperImage: images.WorkloadRef, Detached: true, Log: log,
	})
	return err
}
