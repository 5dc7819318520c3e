package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockExclusive takes an exclusive flock on path, polling until ctx ends; holder
// names, for the error, what holds it. Closing the file releases it (also when
// the process dies).
func LockExclusive(ctx context.Context, path, holder string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s (%s): %w", path, holder, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// nodeIPLock serialises control planes whose API server listens on nodeAPIPort on
// every address: test packages running in parallel wait for each other.
const nodeIPLock = "/run/gpuvc-localcp-nodeip.lock"
