package images

import (
	"fmt"
	"os"
	"path"
)

// Host files the images borrow.
const (
	// HostBusybox is Debian's busybox-static: one static binary that is sh, cp and
	// the other tools the charts and tests call.
	HostBusybox = "/bin/busybox"
	// HostCABundle is the host's CA bundle, copied to the same path in the images.
	HostCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// pathEnv is the usual search path; the charts name commands (cp, gpuvc) without a
// directory.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// NonrootUID is the user the gpuvc, CoreDNS and workload images run as, like
// distroless' nonroot.
const NonrootUID = 65532

const (
	nonrootUser = "65532:65532"
	nonrootHome = "/home/nonroot"
)

// CABundle returns the host's CA bundle as an image file, or nothing when the host
// has none (the images then trust no one, which only matters for TLS to outside).
func CABundle() []File {
	if _, err := os.Stat(HostCABundle); err != nil {
		return nil
	}
	return []File{{Source: HostCABundle, Path: HostCABundle, Mode: 0o644}}
}

// busyboxFiles puts a busybox binary at /bin/busybox with one symlink per applet;
// the binary picks the applet from the name it was started as.
func busyboxFiles(source string, applets ...string) ([]File, []Symlink) {
	if source == "" {
		source = HostBusybox
	}
	files := []File{{Source: source, Path: "/bin/busybox", Mode: Executable}}
	links := make([]Symlink, 0, len(applets))
	for _, a := range applets {
		links = append(links, Symlink{Path: path.Join("/bin", a), Target: "busybox"})
	}
	return files, links
}

// accounts gives the images root and nonroot entries in /etc/passwd and
// /etc/group, for tools that look the current user up.
func accounts() []File {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n",
		NonrootUID, NonrootUID, nonrootHome)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonrootUID)
	return []File{
		{Path: "/etc/passwd", Content: []byte(passwd), Mode: 0o644},
		{Path: "/etc/group", Content: []byte(group), Mode: 0o644},
	}
}

// nonrootDirs are the writable places of a nonroot image: its home and /tmp.
func nonrootDirs() []Dir {
	return []Dir{
		{Path: nonrootHome, Mode: 0o700, UID: NonrootUID, GID: NonrootUID},
		{Path: "/tmp", Mode: 0o1777},
	}
}
