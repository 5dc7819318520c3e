// Package vclusterstest gives tests the real vCluster chart without network access
// beyond the Go module proxy.
package vclusterstest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gpuvc/gpuvc/vclusters"
)

// VClusterModule is the Go module whose zip carries the chart of the same version.
const VClusterModule = "github.com/loft-sh/vcluster"

var (
	once   sync.Once
	dir    string
	dirErr error
)

// ChartDir returns chart/ of github.com/loft-sh/vcluster@v<DefaultChartVersion> in the
// module cache, downloading the module (checksum database off for loft-sh modules,
// which it lacks) the first time.
func ChartDir(ctx context.Context) (string, error) {
	once.Do(func() { dir, dirErr = download(ctx) })
	return dir, dirErr
}

func download(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	mod := VClusterModule + "@v" + vclusters.DefaultChartVersion
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	cmd.Env = append(os.Environ(), "GONOSUMDB="+nosumdb())
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return "", fmt.Errorf("go mod download %s: %v %s %s", mod, err, out, stderr)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s: %v", mod, err)
	}
	if info.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	chart := filepath.Join(info.Dir, "chart")
	if _, err := os.Stat(filepath.Join(chart, "Chart.yaml")); err != nil {
		return "", fmt.Errorf("%s has no chart: %w", mod, err)
	}
	return chart, nil
}

// nosumdb keeps the caller's GONOSUMDB and adds loft-sh's modules to it.
func nosumdb() string {
	const loft = "github.com/loft-sh/*"
	cur := os.Getenv("GONOSUMDB")
	if cur == "" {
		return loft
	}
	if strings.Contains(cur, loft) {
		return cur
	}
	return cur + "," + loft
}

// ChartSource is the module's chart as a directory source.
func ChartSource(ctx context.Context) (vclusters.ChartSource, error) {
	d, err := ChartDir(ctx)
	if err != nil {
		return vclusters.ChartSource{}, err
	}
	return vclusters.ChartSource{Dir: d, Version: vclusters.DefaultChartVersion}, nil
}
