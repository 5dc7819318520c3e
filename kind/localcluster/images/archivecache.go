package images

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// KeepUnused is how long an archive stays in the cache after it was last built or
// handed out by Build, once a newer archive of the same image exists. Runs on this
// machine import an archive minutes after Build returned it (kind creates its
// cluster first, a real node waits for its slot); one that may wait longer holds the
// archive (Hold).
const KeepUnused = time.Hour

// Hold marks the archive at path as in use until release is called (or the process
// ends): no Build, in this process or another, removes it meanwhile, whatever its
// age. It fails when the archive is gone, e.g. removed before it was held.
func Hold(path string) (release func(), err error) {
	f, err := lockArchive(path, syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// HoldAll holds every archive (Hold); release lets them all go.
func HoldAll(paths []string) (release func(), err error) {
	var held []func()
	release = func() {
		for _, r := range held {
			r()
		}
	}
	for _, p := range paths {
		r, err := Hold(p)
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, r)
	}
	return release, nil
}

// reuse marks a cached archive as just used, so a concurrent build of a newer one
// keeps it for KeepUnused. It reports false when the archive was removed (then
// Build writes it again).
func reuse(path string) bool {
	f, err := lockArchive(path, syscall.LOCK_SH)
	if err != nil {
		return false
	}
	defer f.Close()
	now := time.Now()
	// Best effort: in a cache another user wrote, the time stays and the
	// archive ages out from its last write.
	_ = os.Chtimes(path, now, now)
	return true
}

// removeOlder deletes the archives of ref other than keep that nobody holds and
// nobody used within KeepUnused: every rebuilt gpuvc binary makes a new one of
// ~50 MB, and only the newest is imported by new runs, while a concurrent run may
// still be about to import an older one.
func removeOlder(dir, ref, keep string) {
	for _, f := range archivesOf(dir, ref) {
		if f != keep {
			removeIfUnused(f, time.Now().Add(-KeepUnused))
		}
	}
}

// archivesOf lists the cached archives of ref, whatever their content key.
func archivesOf(dir, ref string) []string {
	anyKey := strings.Repeat("?", 16)
	prefix := strings.TrimSuffix(fileName(ref, strings.Repeat("0", 16)), strings.Repeat("0", 16)+".tar")
	found, _ := filepath.Glob(filepath.Join(dir, prefix+anyKey+".tar"))
	return found
}

// removeIfUnused removes the archive when no one holds it and it was last used
// before cutoff. The exclusive lock makes the check and the removal one step
// against Hold and reuse, which take the shared lock.
func removeIfUnused(path string, cutoff time.Time) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // held
	}
	if info, err := f.Stat(); err == nil && info.ModTime().Before(cutoff) {
		_ = os.Remove(path)
	}
}

// lockArchive opens path and takes a flock of the given kind, then checks that
// path still names the file it locked: a remover that held the exclusive lock
// first has unlinked it.
func lockArchive(path string, how int) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image archive: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking image archive %s: %w", path, err)
	}
	locked, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	named, err := os.Stat(path)
	if err != nil || !os.SameFile(locked, named) {
		f.Close()
		return nil, fmt.Errorf("image archive %s was removed from the cache (a newer build of its image replaced it; build it again): %w", path, os.ErrNotExist)
	}
	return f, nil
}
