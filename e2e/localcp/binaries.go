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
	"slices"
	"strings"
	"syscall"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// toolBuild describes how one wrapper module under tools/ is built.
type toolBuild struct {
	name     string // cache key prefix; also the folder under tools/ unless module is set
	module   string // folder under tools/ holding the wrapper module, if not name
	version  string
	packages []string // import paths; each becomes a binary named after its last element
	ldflags  string
	env      []string // extra environment for go build, e.g. CGO_ENABLED=0
	tags     []string // build tags
}

// moduleDir is the folder under tools/ holding the build's wrapper module.
func (tb toolBuild) moduleDir() string {
	if tb.module != "" {
		return tb.module
	}
	return tb.name
}

// toolBuilds are the builds of the control plane's binaries.
func toolBuilds() []toolBuild {
	return []toolBuild{
		{
			name:     "etcd",
			version:  localcluster.EtcdVersion,
			packages: []string{"go.etcd.io/etcd/server/v3"},
			ldflags:  "-s -w",
		},
		{
			name:    "kubernetes",
			version: localcluster.KubernetesVersion,
			packages: []string{
				"k8s.io/kubernetes/cmd/kube-apiserver",
				"k8s.io/kubernetes/cmd/kube-controller-manager",
				"k8s.io/kubernetes/cmd/kube-scheduler",
				"k8s.io/kubernetes/cmd/kubectl",
			},
			ldflags: kubernetesLDFlags(),
		},
		{
			name:     "kwok",
			version:  localcluster.KwokVersion,
			packages: []string{"sigs.k8s.io/kwok/cmd/kwok"},
			ldflags:  "-s -w",
		},
	}
}

// kubernetesLDFlags stamp the Kubernetes version into its binaries. Without it the
// server reports v0.0.0 and version-gated clients misbehave.
func kubernetesLDFlags() string {
	k8sVersion := strings.TrimPrefix(localcluster.KubernetesVersion, "v")
	major, minor, _ := strings.Cut(k8sVersion, ".")
	minor, _, _ = strings.Cut(minor, ".")
	return "-s -w" +
		" -X k8s.io/component-base/version.gitVersion=" + localcluster.KubernetesVersion +
		" -X k8s.io/component-base/version.gitMajor=" + major +
		" -X k8s.io/component-base/version.gitMinor=" + minor +
		" -X k8s.io/component-base/version.gitTreeState=clean"
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
// cached yet, and lists them (and kwok's stage documents) in the manifest. Builds are serialised by a file lock so parallel test packages build
// once; a cache hit only stats files. Build output goes to log.
func EnsureBinaries(ctx context.Context, log io.Writer) (*localcluster.Binaries, error) {
	dirs, err := ensureTools(ctx, toolBuilds(), newProgress(log, len(toolBuilds())))
	if err != nil {
		return nil, err
	}
	if err := recordKwokStages(); err != nil {
		return nil, err
	}
	return &localcluster.Binaries{
		Etcd:              filepath.Join(dirs["etcd"], exeName("go.etcd.io/etcd/server/v3")),
		APIServer:         filepath.Join(dirs["kubernetes"], "kube-apiserver"),
		ControllerManager: filepath.Join(dirs["kubernetes"], "kube-controller-manager"),
		Scheduler:         filepath.Join(dirs["kubernetes"], "kube-scheduler"),
		Kubectl:           filepath.Join(dirs["kubernetes"], "kubectl"),
		Kwok:              filepath.Join(dirs["kwok"], "kwok"),
	}, nil
}

// cacheKey names a build by tool, version and a hash of everything that shapes the
// binaries (wrapper go.mod/go.sum and its folder, packages, flags, environment, tags,
// Go version), so a changed recipe never reuses a stale build.
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
	// Only builds that use them hash these, so the keys of plain builds (and their
	// cached binaries, minutes of work) stay what they were.
	if tb.moduleDir() != tb.name || len(tb.env) > 0 || len(tb.tags) > 0 {
		tags := slices.Clone(tb.tags)
		slices.Sort(tags)
		fmt.Fprintf(h, "|module=%s|env=%q|tags=%q", tb.moduleDir(), tb.env, tags)
	}
	return fmt.Sprintf("%s-%s-%s", tb.name, tb.version, hex.EncodeToString(h.Sum(nil))[:12]), nil
}

// goBuildArgs are the arguments of the go command that builds tb into dir.
func goBuildArgs(tb toolBuild, dir string) []string {
	args := []string{"build", "-trimpath"}
	if len(tb.tags) > 0 {
		args = append(args, "-tags", strings.Join(tb.tags, ","))
	}
	args = append(args, "-ldflags", tb.ldflags, "-o", dir+string(filepath.Separator))
	return append(args, tb.packages...)
}

// ensureTool returns the cache folder holding tb's binaries, building them first
// unless they are cached, and records them in the manifest. pr numbers the line
// it prints.
func ensureTool(ctx context.Context, tb toolBuild, pr *progress) (string, error) {
	modDir := filepath.Join(ToolsDir(), tb.moduleDir())
	key, err := cacheKey(tb, modDir)
	if err != nil {
		return "", err
	}
	binDir := filepath.Join(localcluster.CacheDir(), "bin")
	dest := filepath.Join(binDir, key)
	if complete(dest, tb) {
		pr.cached(tb)
		return dest, record(tb, dest)
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
		pr.cached(tb)
		return dest, record(tb, dest)
	}
	tmp := dest + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", goBuildArgs(tb, tmp)...)
	cmd.Dir = modDir
	cmd.Stdout, cmd.Stderr = pr.log, pr.log
	// Later entries win: tb.env overrides the caller's environment.
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOWORK=off"), tb.env...)
	stop := pr.building(tb, dest)
	err = cmd.Run()
	stop()
	if err != nil {
		return "", fmt.Errorf("building %s %s in %s: %w", tb.name, tb.version, modDir, err)
	}
	pr.built(tb, peakRSS(cmd.ProcessState))
	if err := os.RemoveAll(dest); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return "", err
	}
	return dest, record(tb, dest)
}

// record lists tb's binaries in the manifest the product reads
// (localcluster.Manifest): a build of one package under its build's name (etcd's
// binary is called "server"), others under their executable names.
func record(tb toolBuild, dir string) error {
	tools := map[string]localcluster.Tool{}
	for _, p := range tb.packages {
		name := exeName(p)
		if len(tb.packages) == 1 {
			name = tb.name
		}
		tools[name] = localcluster.Tool{Path: filepath.Join(dir, exeName(p)), Version: tb.version}
	}
	return localcluster.Record(tools, nil)
}

func complete(dir string, tb toolBuild) bool {
	for _, p := range tb.packages {
		if _, err := os.Stat(filepath.Join(dir, exeName(p))); err != nil {
			return false
		}
	}
	return true
}

// peakRSS describes the largest resident set of a finished build (the go command
// or, as the kernel reports it, the largest of its waited-for children: compile, link).
func peakRSS(ps *os.ProcessState) string {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 0 {
		return fmt.Sprintf(" (peak RSS %d MiB)", ru.Maxrss/1024) // Linux reports KiB
	}
	return ""
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
