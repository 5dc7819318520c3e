package manager

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/charts"
)

func installCRDs(ctx context.Context, cfg *rest.Config) error { return charts.InstallCRDs(ctx, cfg) }
