package images_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// appBuilder builds example.com/app:1 into one cache folder with the content it
// is given: each call stands for a run (another test, another `make trial`)
// building its own gpuvc binary. flock locks belong to open files, not
// processes, so a Hold in this process conflicts with a Build as another
// process's would.
func appBuilder(t *testing.T) (dir string, build func(content string) string) {
	dir = t.TempDir()
	src := filepath.Join(t.TempDir(), "bin")
	return dir, func(content string) string {
		t.Helper()
		require.NoError(t, os.WriteFile(src, []byte(content), 0o755))
		tar, err := images.Build(images.Spec{Ref: "example.com/app:1", Files: []images.File{{Source: src, Path: "/app", Mode: images.Executable}}}, dir)
		require.NoError(t, err)
		return tar
	}
}

// age makes the archive look last used longer ago than KeepUnused.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-images.KeepUnused - time.Minute)
	require.NoError(t, os.Chtimes(path, old, old))
}

func requireExists(t *testing.T, want map[string]bool) {
	t.Helper()
	for path, exists := range want {
		_, err := os.Stat(path)
		require.Equal(t, exists, err == nil, "%s exists", filepath.Base(path))
	}
}

func TestRebuildRemovesOlderArchivesNobodyUsesOfTheSameReference(t *testing.T) {
	dir, build := appBuilder(t)
	first := build("one")
	other, err := images.Build(images.Spec{Ref: "example.com/app-other:1", Files: []images.File{{Content: []byte("x"), Path: "/x", Mode: 0o644}}}, dir)
	require.NoError(t, err)
	age(t, first)
	age(t, other)

	second := build("two")

	require.NotEqual(t, first, second)
	requireExists(t, map[string]bool{first: false, second: true, other: true})
}

func TestRebuildKeepsAnArchiveUsedWithinKeepUnused(t *testing.T) {
	_, build := appBuilder(t)
	first := build("one") // just written: in use by the run that built it

	second := build("two")

	requireExists(t, map[string]bool{first: true, second: true})

	// Handed out again by a cache hit: its clock starts again.
	age(t, first)
	require.Equal(t, first, build("one"))
	build("three")
	requireExists(t, map[string]bool{first: true})
}

func TestRebuildKeepsAHeldArchiveWhateverItsAge(t *testing.T) {
	_, build := appBuilder(t)
	first := build("one")
	release, err := images.Hold(first)
	require.NoError(t, err)
	age(t, first)

	second := build("two")
	requireExists(t, map[string]bool{first: true, second: true})

	release()
	build("three")
	requireExists(t, map[string]bool{first: false, second: true})
}

func TestHoldFailsOnARemovedArchive(t *testing.T) {
	_, build := appBuilder(t)
	first := build("one")
	age(t, first)
	build("two")

	_, err := images.HoldAll([]string{first})
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, filepath.Base(first))
}

// holderEnv makes the test binary a holder process: it holds the archive named
// by the variable, says "held", and lets go when its stdin closes.
const holderEnv = "GPUVC_TEST_HOLD_ARCHIVE"

func TestHolderProcess(t *testing.T) {
	path := os.Getenv(holderEnv)
	if path == "" {
		t.Skip("helper process of TestAnotherProcessHoldsItsArchive")
	}
	release, err := images.Hold(path)
	require.NoError(t, err)
	defer release()
	fmt.Println("held")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// The same with the holder in another process, as another test run or `make
// trial` would be.
func TestAnotherProcessHoldsItsArchive(t *testing.T) {
	_, build := appBuilder(t)
	first := build("one")
	holder := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$")
	holder.Env = append(os.Environ(), holderEnv+"="+first)
	stdin, err := holder.StdinPipe()
	require.NoError(t, err)
	stdout, err := holder.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, holder.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "held\n", line)
	age(t, first)

	build("two")
	requireExists(t, map[string]bool{first: true})

	require.NoError(t, stdin.Close())
	require.NoError(t, holder.Wait())
	build("three")
	requireExists(t, map[string]bool{first: false})
}
