package localcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// Versions of the components the local control plane runs.
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.16"
	KwokVersion       = "v0.8.0"
)

// Binaries are the paths of the executables a control plane is made of.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Scheduler         string
	Kubectl           string
	Kwok              string
}

// toolBuild describes how one wrapper module under tools/ is built.
type toolBuild struct {
	name     string // folder under tools/ and cache key prefix
	version  string
	packages []string // import paths; each becomes a binary named after its last element
	ldflags  string
}

func toolBuilds() []toolBuild {
	k8sVersion := strings.TrimPrefix(KubernetesVersion, "v")
	major, minor, _ := strings.Cut(k8sVersion, ".")
	minor, _, _ = strings.Cut(minor, ".")
	return []toolBuild{
		{
			name:     "etcd",
			version:  EtcdVersion,
			packages: []string{"go.etcd.io/etcd/server/v3"},
			ldflags:  "-s -w",
		},
		{
			name:    "kubernetes",
			version: KubernetesVersion,
			packages: []string{
				"k8s.io/kubernetes/cmd/kube-apiserver",
				"k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler",
				"k8s.io/kubernetes/cmd/kubectl",
			},
			// Without the version stamp the server reports v0.0.0 and version-gated
			// clients misbehave.
			ldflags: "-s -w" +
				" -X k8s.io/component-base/version.gitVersion=" + KubernetesVersion +
				" -X k8s.io/component-base/version.gitMajor=" + major +
				" -X k8s.io/component-base/version.gitMinor=" + minor +
				" -X k8s.io/component-base/version.gitTreeState=clean",
		},
		{
			name:     "kwok",
			version:  KwokVersion,
			packages: []string{"sigs.k8s.io/kwok/cmd/kwok"},
			ldflags:  "-s -w",
		},
	}
}

// CacheDir is where built binaries are kept: $GPUVC_CACHE_DIR, else
// $XDG_CACHE_HOME/gpuvc, else ~/.cache/gpuvc.
func CacheDir() string {
	if d := os.Getenv("GPUVC_CACHE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "gpuvc")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "gpuvc-cache")
	}
	return filepath.Join(home, ".cache", "gpuvc")
}

// ToolsDir is the folder holding the wrapper modules (tools/<name>/go.mod). It is
// found next to this source file; GPUVC_LOCALCP_TOOLS overrides it for binaries
// run away from their source tree.
func ToolsDir() string {
	if d := os.Getenv("GPUVC_LOCALCP_TOOLS"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "tools")
}

// EnsureBinaries returns the control-plane binaries, building any that are not
// cached yet. Builds are serialised by a file lock so parallel test packages build
// once; a cache hit only stats files. Build output goes to log.
func EnsureBinaries(ctx context.Context, log io.Writer) (*Binaries, error) {
	dirs := map[string]string{}
	for _, tb := range toolBuilds() {
		dir, err := ensureTool(ctx, tb, log)
		if err != nil {
			return nil, err
		}
		dirs[tb.name] = dir
	}
	return &Binaries{
		Etcd:              filepath.Join(dirs["etcd"], exeName("go.etcd.io/etcd/server/v3")),
		APIServer:         filepath.Join(dirs["kubernetes"], "kube-apiserver"),
		ControllerManager: filepath.Join(dirs["kubernetes"], "kube-controller-manager"),
		Scheduler:         filepath.Join(dirs["kubernetes"], "kube-scheduler"),
		Kubectl:           filepath.Join(dirs["kubernetes"], "kubectl"),
		Kwok:              filepath.Join(dirs["kwok"], "kwok"),
	}, nil
}

// cacheKey names a build by tool, version and a hash of everything that shapes the
// binaries (wrapper go.mod/go.sum, packages, flags, Go version), so a changed recipe
// never reuses a stale build.
func cacheKey(tb toolBuild, modDir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(modDir, f))
		if err != nil {
			return "", fmt.Errorf("reading wrapper module %s: %w", modDir, err)
		}
		h.Write(b)
	}
	fmt.Fprintf(h, "%v|%s|%s", tb.packages, tb.ldflags, runtime.Version())
	return fmt.Sprintf("%s-%s-%s", tb.name, tb.version, hex.EncodeToString(h.Sum(nil))[:12]), nil
}

func ensureTool(ctx context.Context, tb toolBuild, log io.Writer) (string, error) {
	modDir := filepath.Join(ToolsDir(), tb.name)
	key, err := cacheKey(tb, modDir)
	if err != nil {
		return "", err
	}
	binDir := filepath.Join(CacheDir(), "bin")
	dest := filepath.Join(binDir, key)
	if complete(dest, tb) {
		return dest, nil
	}
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(filepath.Join(binDir, ".build.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if complete(dest, tb) { // another process built it while we waited
		return dest, nil
	}
	tmp := dest + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "localcp: building %s %s into %s (first run only; minutes)\n", tb.name, tb.version, dest)
	args := append([]string{"build", "-trimpath", "-ldflags", tb.ldflags, "-o", tmp + string(filepath.Separator)}, tb.packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = modDir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off")
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s %s in %s: %w", tb.name, tb.version, modDir, err)
	}
	if err := os.RemoveAll(dest); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return "", err
	}
	return dest, nil
}

func complete(dir string, tb toolBuild) bool {
	for _, p := range tb.packages {
		if _, err := os.Stat(filepath.Join(dir, exeName(p))); err != nil {
			return false
		}
	}
	return true
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, errors.Join(fmt.Errorf("locking %s", path), err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// exeName is the file name `go build -o dir/` gives a main package: its last path
// element, skipping a major-version suffix such as /v3.
func exeName(pkg string) string {
	base := path.Base(pkg)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		return path.Base(path.Dir(pkg))
	}
	return base
}
