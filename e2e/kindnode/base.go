package kindnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// debianSuite is the release of the node's root file system: the host's, so the
// Kubernetes binaries linked against the host's glibc run in the node unchanged.
const debianSuite = "bookworm"

// debianMirror is where mmdebstrap fetches packages; GPUVC_DEBIAN_MIRROR overrides it.
func debianMirror() string {
	if m := os.Getenv("GPUVC_DEBIAN_MIRROR"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

// basePackages make a node that boots systemd and runs pods: runc and the CNI
// plugins for containerd, iptables/conntrack for the kubelet and kube-proxy's
// host side, mount/util-linux/kmod for the kubelet's volume and cgroup work.
var basePackages = []string{
	"systemd", "systemd-sysv", "dbus", "bash", "ca-certificates", "procps",
	"iptables", "nftables", "ebtables", "iproute2", "iputils-ping", "conntrack",
	"ethtool", "socat", "mount", "util-linux", "kmod",
	"runc", "containernetworking-plugins", "libseccomp2",
}

// CacheDir holds the node's root file system and nothing else of this package;
// the images it builds go to the images cache and the Docker engine.
func CacheDir() string { return filepath.Join(localcluster.CacheDir(), "kind-node") }

// ensureBase returns a tarball of the node's Debian root file system, made once
// with mmdebstrap (~1.5 min) and cached under a key of suite, mirror and packages,
// gzipped (mmdebstrap compresses by the name) so the node image copies it as is.
func ensureBase(ctx context.Context, log io.Writer) (string, error) {
	h := sha256.Sum256([]byte(debianSuite + "|" + debianMirror() + "|" + strings.Join(basePackages, ",")))
	out := filepath.Join(CacheDir(), fmt.Sprintf("rootfs-%s-%s.tar.gz", debianSuite, hex.EncodeToString(h[:])[:12]))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return "", fmt.Errorf("building kind's node image needs mmdebstrap for its Debian root file system: install it (apt-get install mmdebstrap)")
	}
	if err := os.MkdirAll(CacheDir(), 0o755); err != nil {
		return "", err
	}
	// mmdebstrap picks the output format by the name's extension.
	tmp := strings.TrimSuffix(out, ".tar.gz") + ".partial.tar.gz"
	fmt.Fprintf(log, "kind node: making its Debian %s root file system with mmdebstrap into %s\n", debianSuite, out)
	cmd := exec.CommandContext(ctx, "mmdebstrap", "--variant=minbase", "--mode=root",
		"--include="+strings.Join(basePackages, ","), debianSuite, tmp, debianMirror())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("mmdebstrap %s: %w", debianSuite, err)
	}
	return out, os.Rename(tmp, out)
}
