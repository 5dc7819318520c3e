package suite

import (
	"context"
	"fmt"
)

// startKind would bring up the kind trial cluster (kind/ package) with gpuvc
// installed from charts/gpuvc. It needs a Docker engine; see README "make trial".
func startKind(_ context.Context, _ string) (Backend, error) {
	return nil, fmt.Errorf("the kind backend is not implemented yet: run with GPUVC_E2E_BACKEND=local")
}
