package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localkueue"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// Kueue runs detached beside the control plane (Options.Kueue): no registry is
// reachable here, so the builder's Kueue binary runs as a local process, as the
// tests run it (kind/localkueue). It starts before gpuvc is installed, so the
// manager finds Kueue's kinds when it starts.

// KueueDir holds Kueue's configuration, certificates, log and pid file.
func KueueDir(dir string) string { return filepath.Join(dir, "kueue") }

func kueuePIDFile(dir string) string { return filepath.Join(KueueDir(dir), "pid") }

// startKueue starts Kueue against cp (detached, or ending with this program)
// and records its pid for Down.
func startKueue(ctx context.Context, dir string, cp *localcluster.ControlPlane, detached bool, log io.Writer) (*localkueue.Kueue, error) {
	if err := os.MkdirAll(KueueDir(dir), 0o700); err != nil {
		return nil, err
	}
	k, err := localkueue.Start(ctx, cp.Config, localkueue.Options{Dir: KueueDir(dir), Detached: detached, Log: log})
	if err != nil {
		return nil, fmt.Errorf("starting Kueue (for Teams with spec.queueing; start without it to skip): %w", err)
	}
	if err := os.WriteFile(kueuePIDFile(dir), []byte(strconv.Itoa(k.PID())), 0o600); err != nil {
		return nil, errors.Join(err, k.Stop())
	}
	return k, nil
}

// stopKueue stops the Kueue Up started in dir; none: nothing to do.
func stopKueue(dir string) error {
	b, err := os.ReadFile(kueuePIDFile(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("%s: %w", kueuePIDFile(dir), err)
	}
	if !supervise.Alive(pid) {
		return nil
	}
	return supervise.StopPID(pid, 10*time.Second)
}
