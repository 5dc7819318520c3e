package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// The manifest is how the product finds the prebuilt binaries: the builder
// (`make binaries`, a gpuvc checkout) writes one line per tool into
// <CacheDir>/bin/manifest.json; this package only reads it and never builds.
const (
	manifestName = "manifest.json"
	// BuildHint is what to run when binaries are missing.
	BuildHint = "run `make binaries` in a gpuvc checkout (about 16 min on 2 cores the first time; cached afterwards in " +
		"$GPUVC_CACHE_DIR, else $XDG_CACHE_HOME/gpuvc, else ~/.cache/gpuvc)"
)

// Files of the manifest that are not executables.
const (
	FileKwokStages    = "kwok-stages"    // kwok's Stage documents (kwok v0.8.0 has none built in)
	FileVClusterChart = "vcluster-chart" // vCluster's Helm chart folder, for images that carry it
	FilePause         = "pause"          // the static pause program of the sandbox image
	FileKueueConfig   = "kueue-config"   // Kueue's config/components folder: CRDs, webhook configurations
)

// Tool is one prebuilt executable.
type Tool struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// Manifest lists the prebuilt executables and files by name.
type Manifest struct {
	Tools map[string]Tool   `json:"tools"`
	Files map[string]string `json:"files,omitempty"`
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

// ManifestPath is the manifest in the cache.
func ManifestPath() string { return filepath.Join(CacheDir(), "bin", manifestName) }

// ErrNotBuilt says binaries are missing; its message names them and what to run.
var ErrNotBuilt = errors.New("prebuilt binaries missing")

// LoadManifest reads the manifest; a missing one is ErrNotBuilt.
func LoadManifest() (*Manifest, error) {
	path := ManifestPath()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s: %s", ErrNotBuilt, path, BuildHint)
	}
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("reading %s: %w (%s)", path, err, BuildHint)
	}
	return m, nil
}

// paths returns the paths of the named tools and files ("file:" prefix), or
// ErrNotBuilt naming every one missing from the manifest or from disk.
func (m *Manifest) paths(names ...string) ([]string, error) {
	var out, missing []string
	for _, n := range names {
		var p string
		if f, ok := strings.CutPrefix(n, "file:"); ok {
			p, n = m.Files[f], f
		} else {
			p = m.Tools[n].Path
		}
		if p == "" {
			missing = append(missing, n)
		} else if _, err := os.Stat(p); err != nil {
			missing = append(missing, n+" ("+p+" is gone)")
		}
		out = append(out, p)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s: %s", ErrNotBuilt, strings.Join(missing, ", "), BuildHint)
	}
	return out, nil
}

// File returns the path of a file the builder recorded (FileKwokStages, ...).
func (m *Manifest) File(name string) (string, error) {
	p, err := m.paths("file:" + name)
	if err != nil {
		return "", err
	}
	return p[0], nil
}

// ControlPlane returns the control plane's binaries.
func (m *Manifest) ControlPlane() (*Binaries, error) {
	p, err := m.paths("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")
	if err != nil {
		return nil, err
	}
	return &Binaries{Etcd: p[0], APIServer: p[1], ControllerManager: p[2], Scheduler: p[3], Kubectl: p[4], Kwok: p[5]}, nil
}

// Node returns a real worker node's binaries.
func (m *Manifest) Node() (*NodeBinaries, error) {
	p, err := m.paths("kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "kube-router")
	if err != nil {
		return nil, err
	}
	return &NodeBinaries{Kubelet: p[0], KubeProxy: p[1], Containerd: p[2], ContainerdShim: p[3], Ctr: p[4], KubeRouter: p[5]}, nil
}

// Tool returns the path of one prebuilt executable by its manifest name
// (e.g. "metrics-server").
func (m *Manifest) Tool(name string) (string, error) {
	p, err := m.paths(name)
	if err != nil {
		return "", err
	}
	return p[0], nil
}

// Images returns the binaries of vCluster's control-plane images.
func (m *Manifest) Images() (*ImageBinaries, error) {
	p, err := m.paths("vcluster", "kine", "coredns")
	if err != nil {
		return nil, err
	}
	return &ImageBinaries{VCluster: p[0], Kine: p[1], CoreDNS: p[2]}, nil
}

// Record merges tools and files into the manifest (the builder's side), under a
// lock so builders running in parallel keep each other's entries.
func Record(tools map[string]Tool, files map[string]string) error {
	path := ManifestPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	m, err := LoadManifest()
	if err != nil {
		m = &Manifest{}
	}
	if m.Tools == nil {
		m.Tools = map[string]Tool{}
	}
	if m.Files == nil {
		m.Files = map[string]string{}
	}
	for k, v := range tools {
		m.Tools[k] = v
	}
	for k, v := range files {
		m.Files[k] = v
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Kueue returns Kueue's controller manager and its config/components folder
// (CRDs and webhook configurations, from the module cache).
func (m *Manifest) Kueue() (binary, configDir string, err error) {
	p, err := m.paths("kueue", "file:"+FileKueueConfig)
	if err != nil {
		return "", "", err
	}
	return p[0], p[1], nil
}

// Names lists the manifest's tools, sorted (for messages).
func (m *Manifest) Names() []string {
	var out []string
	for k := range m.Tools {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
