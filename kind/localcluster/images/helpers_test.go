package images_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// builtImage is an image read back from its tarball the way an importer finds it:
// by its tag.
type builtImage struct {
	path    string
	img     v1.Image
	config  v1.Config
	entries map[string]*tar.Header // by absolute path
}

// build builds the spec into a fresh folder and reads the result back.
func build(t *testing.T, spec images.Spec) builtImage {
	t.Helper()
	p, err := images.Build(spec, t.TempDir())
	require.NoError(t, err)
	return load(t, p, spec.Ref)
}

func load(t *testing.T, tarPath, ref string) builtImage {
	t.Helper()
	tag, err := name.NewTag(ref)
	require.NoError(t, err)
	img, err := tarball.ImageFromPath(tarPath, &tag)
	require.NoError(t, err, "the tarball must hold %s", ref)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "linux", cfg.OS)
	require.Equal(t, "amd64", cfg.Architecture)

	entries := map[string]*tar.Header{}
	eachEntry(t, img, func(hdr *tar.Header, _ io.Reader) {
		entries["/"+strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")] = hdr
	})
	return builtImage{path: tarPath, img: img, config: cfg.Config, entries: entries}
}

func (b builtImage) digest(t *testing.T) v1.Hash {
	t.Helper()
	d, err := b.img.Digest()
	require.NoError(t, err)
	return d
}

// requireFile checks a regular file's mode and owner.
func (b builtImage) requireFile(t *testing.T, path string, mode int64) {
	t.Helper()
	hdr, ok := b.entries[path]
	require.True(t, ok, "%s is missing", path)
	require.Equal(t, byte(tar.TypeReg), hdr.Typeflag, "%s is not a regular file", path)
	require.Equal(t, mode, hdr.Mode, "mode of %s", path)
	require.Equal(t, 0, hdr.Uid, "owner of %s", path)
}

func (b builtImage) requireDir(t *testing.T, path string, mode int64, uid int) {
	t.Helper()
	hdr, ok := b.entries[path]
	require.True(t, ok, "%s is missing", path)
	require.Equal(t, byte(tar.TypeDir), hdr.Typeflag, "%s is not a directory", path)
	require.Equal(t, mode, hdr.Mode, "mode of %s", path)
	require.Equal(t, uid, hdr.Uid, "owner of %s", path)
}

func (b builtImage) requireSymlink(t *testing.T, path, target string) {
	t.Helper()
	hdr, ok := b.entries[path]
	require.True(t, ok, "%s is missing", path)
	require.Equal(t, byte(tar.TypeSymlink), hdr.Typeflag, "%s is not a symlink", path)
	require.Equal(t, target, hdr.Linkname)
}

// standIn writes a small file that plays a binary the test does not need to run.
func standIn(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte("stand-in for "+name+"\n"), 0o755))
	return p
}

func requireHostBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(images.HostBusybox); err != nil {
		t.Skipf("needs busybox-static at %s: %v", images.HostBusybox, err)
	}
}

// unpack writes the image's file system into a folder, as a container runtime
// would, so tests can run its programs in a chroot.
func (b builtImage) unpack(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	eachEntry(t, b.img, func(hdr *tar.Header, content io.Reader) {
		p := filepath.Join(root, hdr.Name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(p, 0o755))
		case tar.TypeSymlink:
			require.NoError(t, os.Symlink(hdr.Linkname, p))
			return
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			require.NoError(t, err)
			_, err = io.Copy(f, content)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
		// Chmod after writing: the mode bits of a directory like /tmp (1777) need it.
		require.NoError(t, os.Chmod(p, os.FileMode(hdr.Mode&0o777)|unixModeBits(hdr.Mode)))
		if os.Geteuid() == 0 {
			require.NoError(t, os.Lchown(p, hdr.Uid, hdr.Gid))
		}
	})
	return root
}

// eachEntry calls fn with every entry of the image's flattened file system, in
// order, and the entry's content.
func eachEntry(t *testing.T, img v1.Image, fn func(hdr *tar.Header, content io.Reader)) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
		fn(hdr, tr)
	}
}

func unixModeBits(mode int64) os.FileMode {
	var m os.FileMode
	if mode&0o1000 != 0 {
		m |= os.ModeSticky
	}
	if mode&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if mode&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	return m
}

// runIn runs argv in a chroot of the unpacked image as the given user, with the
// image's environment, and returns its combined output. Without the privilege to
// chroot the test is skipped: the layout assertions still ran.
func runIn(t *testing.T, root string, cfg v1.Config, uid uint32, stdin string, argv ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running programs of an image needs root (chroot)")
	}
	prog := argv[0]
	if !strings.HasPrefix(prog, "/") {
		prog = lookPathIn(t, root, cfg.Env, prog)
	}
	var out bytes.Buffer
	cmd := &exec.Cmd{
		Path:   prog,
		Args:   argv,
		Env:    cfg.Env,
		Dir:    "/",
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &out,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: uid, Gid: uid},
		},
	}
	err := cmd.Run()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("chroot not permitted: %v", err)
	}
	require.NoError(t, err, "%v in the image: %s", argv, out.String())
	return out.String()
}

// lookPathIn finds a command on the image's PATH, as the container runtime does.
func lookPathIn(t *testing.T, root string, env []string, prog string) string {
	t.Helper()
	for _, e := range env {
		dirs, ok := strings.CutPrefix(e, "PATH=")
		if !ok {
			continue
		}
		for _, d := range strings.Split(dirs, ":") {
			if _, err := os.Lstat(filepath.Join(root, d, prog)); err == nil {
				return filepath.Join(d, prog)
			}
		}
	}
	t.Fatalf("%s is not on the image's PATH (env %v)", prog, env)
	return ""
}
