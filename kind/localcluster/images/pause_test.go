package images_test

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

func TestPauseImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	spec, err := localcp.Pause(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, "registry.k8s.io/pause:3.10", spec.Ref)
	img := build(t, spec)
	require.Equal(t, []string{"/pause"}, img.config.Entrypoint)
	require.Equal(t, "65535:65535", img.config.User)
	img.requireFile(t, "/pause", 0o755)
	require.Len(t, img.entries, 1, "the pause image holds only the program")

	bin, err := localcp.BuildPause(ctx, dir)
	require.NoError(t, err)
	require.Equal(t, spec.Files[0].Source, bin, "built once, then reused")
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "pause must be static: the image has no libc")
	}
}

// TestPauseProgram runs the program the way it lives in a pod: it adopts a child
// that exits, must reap it, and stops cleanly on SIGTERM.
func TestPauseProgram(t *testing.T) {
	requireHostBusybox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := localcp.BuildPause(ctx, t.TempDir())
	require.NoError(t, err)

	// The shell ignores SIGINT before exec'ing pause: Go then installs its SIGINT
	// handler only when pause calls signal.Notify, which the test can see in
	// /proc, so it knows when pause is ready. The background `true` becomes a
	// child of pause.
	script := images.HostBusybox + " true & exec " + bin
	cmd := exec.Command(images.HostBusybox, "sh", "-c", "trap '' INT; "+script)
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return catchesSignal(pid, syscall.SIGINT) && len(childrenOf(pid)) == 0, nil
	})
	require.NoError(t, err, "pause did not get ready or left children %v", childrenOf(pid))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "pause must exit 0 on SIGTERM")
	case <-time.After(10 * time.Second):
		t.Fatal("pause ignored SIGTERM")
	}
}

// catchesSignal reads the caught-signals mask of a process.
func catchesSignal(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return err == nil && m&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}

// childrenOf lists the processes (zombies included) whose parent is pid.
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var children []int
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if errors.Is(err, os.ErrNotExist) || err != nil {
			continue
		}
		// The command name may hold spaces: fields start after its closing ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			children = append(children, child)
		}
	}
	return children
}
