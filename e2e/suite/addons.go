package suite

import (
	"context"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// startAddons starts the host add-ons a team's cluster relies on beside the
// real node, as the local stack does: the default StorageClass's provisioner
// and the Metrics API (kind/localaddons), their files under the control
// plane's folder.
func startAddons(ctx context.Context, cp *localcluster.ControlPlane) (*localaddons.Addons, error) {
	return localaddons.Start(ctx, cp, localaddons.Options{
		Dir: filepath.Join(cp.Dir, "addons"), Node: realNodeName, HelperImage: images.WorkloadRef, Log: logWriter,
	})
}
