package images_test

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

const hostInterpreter = "/lib64/ld-linux-x86-64.so.2"

func TestSharedLibrariesOfADynamicBinary(t *testing.T) {
	if _, err := os.Stat("/bin/ls"); err != nil {
		t.Skip("needs /bin/ls")
	}
	libs, err := images.SharedLibraries("/bin/ls")
	require.NoError(t, err)
	requireLoaderAndLibc(t, libs)
}

func TestSharedLibrariesOfACgoBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a cgo program")
	}
	libs, err := images.SharedLibraries(cgoProgram(t))
	require.NoError(t, err)
	requireLoaderAndLibc(t, libs)
}

func TestSharedLibrariesOfStaticAndNonELFFiles(t *testing.T) {
	requireHostBusybox(t)
	for _, f := range []string{images.HostBusybox, standIn(t, "script")} {
		libs, err := images.SharedLibraries(f)
		require.NoError(t, err)
		require.Empty(t, libs, f)
	}
}

// requireLoaderAndLibc checks the interpreter and libc are there, as regular files
// read from the real files behind the host's symlinks.
func requireLoaderAndLibc(t *testing.T, libs []images.File) {
	t.Helper()
	byName := map[string]images.File{}
	for _, l := range libs {
		byName[path.Base(l.Path)] = l
		info, err := os.Lstat(l.Source)
		require.NoError(t, err)
		require.True(t, info.Mode().IsRegular(), "%s is read from %s, not a regular file", l.Path, l.Source)
	}
	require.Contains(t, byName, "libc.so.6")
	require.Equal(t, "/lib/x86_64-linux-gnu/libc.so.6", byName["libc.so.6"].Path)
	interp, ok := byName[path.Base(hostInterpreter)]
	require.True(t, ok, "the interpreter is missing from %v", libs)
	require.Equal(t, hostInterpreter, interp.Path, "the loader is needed where the binary names it")
}

// cgoProgram builds a tiny dynamically linked program like gpuvc (cgo, lazy binding).
func cgoProgram(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc for cgo")
	}
	dir := t.TempDir()
	src := "package main\n\n// #include <stdlib.h>\nimport \"C\"\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"cgo\", C.abs(-7)) }\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module cgoprog\n\ngo 1.26\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(dir, "cgoprog")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-extldflags=-Wl,-z,lazy", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS=-buildvcs=false", "GOWORK=off")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.True(t, strings.HasPrefix(string(mustRun(t, out)), "cgo 7"))
	return out
}

func mustRun(t *testing.T, prog string, args ...string) []byte {
	t.Helper()
	b, err := exec.Command(prog, args...).CombinedOutput()
	require.NoError(t, err, "%s", b)
	return b
}
