package localnode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// runcPath is Debian's runc (package runc).
const runcPath = "/usr/sbin/runc"

// cniBinDir holds Debian's CNI plugins (package containernetworking-plugins).
const cniBinDir = "/usr/lib/cni"

// criNamespace is the containerd namespace the CRI plugin keeps its images in.
const criNamespace = "k8s.io"

// containerdConfig is containerd's configuration (version 3): every folder and
// socket under the node's folder, the CRI plugin running pods with Debian's runc
// under cgroupfs and the bridge network, the sandbox image pinned to a local image,
// and image pulls pointed at a closed loopback port so nothing is fetched from the
// internet (images come from ImportImages).
func (n *Node) containerdConfig() ([]byte, error) {
	cfg := map[string]any{
		"version": 3,
		"root":    n.path("containerd", "root"),
		"state":   n.path("containerd", "state"),
		"temp":    n.path("containerd", "tmp"),
		"grpc":    map[string]any{"address": n.containerdSocket()},
		"ttrpc":   map[string]any{"address": n.containerdSocket() + ".ttrpc"},
		"debug":   map[string]any{"address": "", "level": "info"},
		"metrics": map[string]any{"address": ""},
		// /opt/containerd would be created for nothing.
		"disabled_plugins": []string{"io.containerd.internal.v1.opt"},
		"required_plugins": []string{"io.containerd.grpc.v1.cri"},
		"plugins": map[string]any{
			"io.containerd.cri.v1.runtime": map[string]any{
				// containerd lacks CAP_SYS_RESOURCE here: without this every sandbox
				// fails ("can't get final child's PID from pipe: EOF").
				"restrict_oom_score_adj":       true,
				"netns_mounts_under_state_dir": true,
				"cdi_spec_dirs":                []string{n.path("cdi")},
				"containerd": map[string]any{
					"default_runtime_name": "runc",
					"runtimes": map[string]any{
						"runc": map[string]any{
							"runtime_type": "io.containerd.runc.v2",
							"options": map[string]any{
								"BinaryName":    runcPath,
								"Root":          n.path("runc"),
								"SystemdCgroup": false,
							},
						},
					},
				},
				"cni": map[string]any{
					"bin_dirs":     []string{cniBinDir},
					"conf_dir":     n.path("cni", "net.d"),
					"max_conf_num": 1,
				},
			},
			"io.containerd.cri.v1.images": map[string]any{
				"snapshotter":   "overlayfs",
				"pinned_images": map[string]any{"sandbox": n.opts.PauseImage},
				"registry":      map[string]any{"config_path": n.path("certs.d")},
			},
			"io.containerd.grpc.v1.cri": map[string]any{
				"stream_server_address": "127.0.0.1",
				"stream_server_port":    "0",
			},
			"io.containerd.shim.v1.manager": map[string]any{"socket_dir": shimSocketDir},
			"io.containerd.nri.v1.nri":      map[string]any{"disable": true},
		},
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(cfg); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// registryHosts sends every pull to a closed loopback port: an image missing
// from the node fails at once instead of being fetched from a registry.
const registryHosts = `server = "http://127.0.0.1:1"
`

// cniConfig is the pod network: the host's bridge (created by Acquire) with
// host-local addresses from the node's /24, the bridge address as gateway, and
// portmap for hostPorts. containerd adds the loopback interface itself.
func (n *Node) cniConfig() ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"cniVersion": "1.0.0",
		"name":       "gpuvc",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      bridgeName,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podSubnet, "gateway": NodeIP.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": n.path("cni", "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}, "", "  ")
}

func (n *Node) containerdSocket() string { return n.path("run", "containerd.sock") }

// startContainerd writes containerd's and the CNI configuration, starts
// containerd and waits until it answers.
func (n *Node) startContainerd(ctx context.Context) error {
	// Unix socket paths hold 107 bytes at most.
	if sock := n.containerdSocket() + ".ttrpc"; len(sock) > 107 {
		return fmt.Errorf("node folder %s is too long for containerd's socket %s: use a shorter Options.Dir", n.Dir, sock)
	}
	files := map[string]func() ([]byte, error){
		n.path("containerd", "config.toml"):         n.containerdConfig,
		n.path("cni", "net.d", "10-gpuvc.conflist"): n.cniConfig,
		n.path("certs.d", "_default", "hosts.toml"): func() ([]byte, error) { return []byte(registryHosts), nil },
	}
	for path, content := range files {
		b, err := content()
		if err != nil {
			return err
		}
		if err := writeFile(path, b); err != nil {
			return err
		}
	}
	for _, d := range []string{n.path("run"), n.path("cni", "ipam"), n.path("cdi"), shimSocketDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	// containerd starts shims by name from PATH.
	binDir := n.path("bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(n.bins.ContainerdShim, filepath.Join(binDir, "containerd-shim-runc-v2")); err != nil && !os.IsExist(err) {
		return err
	}
	env := []string{"PATH=" + binDir + ":" + filepath.Dir(n.bins.Containerd) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if err := n.start("containerd", n.bins.Containerd, []string{"--config", n.path("containerd", "config.toml")}, env); err != nil {
		return err
	}
	return n.poll(ctx, "containerd", func(ctx context.Context) (bool, error) {
		out, err := n.ctr(ctx, "version")
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, out)
		}
		return true, nil
	})
}

// ctr runs containerd's CLI against the node's containerd, in the CRI namespace.
func (n *Node) ctr(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	full := append([]string{"--address", n.containerdSocket(), "--namespace", criNamespace}, args...)
	return exec.CommandContext(ctx, n.bins.Ctr, full...).CombinedOutput()
}

// ImportImages imports docker-archive (or OCI) tarballs into the node's
// containerd, where pods find them by name: use imagePullPolicy Never or
// IfNotPresent, as nothing can be pulled.
func (n *Node) ImportImages(ctx context.Context, tars ...string) error {
	for _, tar := range tars {
		began := time.Now()
		if out, err := n.ctr(ctx, "images", "import", tar); err != nil {
			return fmt.Errorf("importing %s: %w: %s", tar, err, bytes.TrimSpace(out))
		}
		n.logf("imported %s in %v", filepath.Base(tar), time.Since(began).Round(time.Millisecond))
	}
	return nil
}

// checkImage fails unless containerd has the image (by full or short name).
func (n *Node) checkImage(ctx context.Context, ref string) error {
	out, err := n.ctr(ctx, "images", "list", "--quiet")
	if err != nil {
		return fmt.Errorf("listing images: %w: %s", err, bytes.TrimSpace(out))
	}
	for _, name := range strings.Fields(string(out)) {
		if name == ref || name == "docker.io/"+ref || name == "docker.io/library/"+ref {
			return nil
		}
	}
	return fmt.Errorf("image %s is not among the imported images (Options.Images): the node would try to pull it", ref)
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
