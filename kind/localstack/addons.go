package localstack

import (
	"context"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// AddonsDir holds the storage provisioner's log and pid file, and the volumes
// of every PersistentVolumeClaim.
func AddonsDir(dir string) string { return filepath.Join(dir, "addons") }

// startAddons starts the default StorageClass's provisioner beside the real
// node, detached unless the stack is attached, and cluster DNS and the Metrics
// API on it (kind/localaddons).
func (u *upper) startAddons(ctx context.Context) (err error) {
	u.s.Addons, err = localaddons.Start(ctx, u.s.ControlPlane, localaddons.Options{
		Dir: AddonsDir(u.opts.Dir), Node: RealNodeName, HelperImage: images.WorkloadRef,
		DNSImage: images.CoreDNSRef, MetricsImage: images.MetricsServerRef, Detached: !u.opts.Attached, Log: u.log,
	})
	return err
}
