package localstack

import (
	"context"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// AddonsDir holds the storage provisioner's and metrics-server's logs and pid
// files, and the volumes of every PersistentVolumeClaim.
func AddonsDir(dir string) string { return filepath.Join(dir, "addons") }

// startAddons starts the default StorageClass's provisioner and the Metrics
// API beside the real node (kind/localaddons), detached unless the stack is
// attached.
func (u *upper) startAddons(ctx context.Context) (err error) {
	u.s.Addons, err = localaddons.Start(ctx, u.s.ControlPlane, localaddons.Options{
		Dir: AddonsDir(u.opts.Dir), Node: RealNodeName, HelperImage: images.WorkloadRef, Detached: !u.opts.Attached, Log: u.log,
	})
	return err
}
