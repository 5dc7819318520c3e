package localcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// Pause compiles the pause program (pause/ beside this file) (once per source and Go
// version, into dir) and returns its image spec.
func Pause(ctx context.Context, dir string) (images.Spec, error) {
	bin, err := BuildPause(ctx, dir)
	if err != nil {
		return images.Spec{}, err
	}
	return images.PauseSpec(bin), nil
}

// BuildPause builds the pause program (pause/ beside this file) as a static binary
// (CGO_ENABLED=0: the image has no libc) and returns its path under dir. Only the
// builder (`make binaries`) and tests call it: it needs the source tree and Go.
func BuildPause(ctx context.Context, dir string) (string, error) {
	src := pauseSource()
	key, err := pauseKey(src)
	if err != nil {
		return "", fmt.Errorf("pause source (binary built with -trimpath?): %w", err)
	}
	out := filepath.Join(dir, "pause-"+key[:16], "pause")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".pause-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(tmp, "pause"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building pause: %w\n%s", err, b)
	}
	// MkdirTemp makes a 0700 folder; others may need to read the binary.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	// Renaming the folder publishes the binary at once to concurrent builders.
	if err := os.Rename(tmp, filepath.Dir(out)); err != nil {
		if _, statErr := os.Stat(out); statErr == nil {
			return out, nil // another builder was first
		}
		return "", err
	}
	return out, nil
}

// pauseSource is the pause program's folder, found next to this file.
func pauseSource() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "pause")
}

// pauseKey hashes the program's Go files and the Go version that builds it.
func pauseKey(src string) (string, error) {
	files, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no Go files in %s", src)
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
