package images

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// libraryDirs are the directories the x86-64 glibc loader searches when a binary
// names no run path and there is no ld.so.cache (images carry none).
var libraryDirs = []string{
	"/lib/x86_64-linux-gnu",
	"/usr/lib/x86_64-linux-gnu",
	"/lib64",
	"/usr/lib64",
	"/lib",
	"/usr/lib",
}

// SharedLibraries returns what a dynamically linked binary needs at run time: its
// ELF interpreter at the path the binary names, and every library of its DT_NEEDED
// closure at the path the loader finds it on this host. Symlinks are followed, so
// each File is a regular file. A static binary needs nothing, and neither does a
// file that is not ELF (a script's interpreter is the image's business).
func SharedLibraries(binary string) ([]File, error) {
	r := &libraryResolver{seen: map[string]bool{}}
	if err := r.resolve(binary); err != nil {
		return nil, fmt.Errorf("shared libraries of %s: %w", binary, err)
	}
	sort.Slice(r.files, func(i, j int) bool { return r.files[i].Path < r.files[j].Path })
	return r.files, nil
}

type libraryResolver struct {
	files  []File
	seen   map[string]bool // image paths already added
	interp string          // real path of the interpreter
}

func (r *libraryResolver) resolve(binary string) error {
	f, err := elf.Open(binary)
	var notELF *elf.FormatError
	if errors.As(err, &notELF) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil // too short or wrong magic: not a binary the loader handles
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("%s is a %s binary; only x86-64 is supported", binary, f.Machine)
	}
	interp, err := interpreter(f)
	if err != nil {
		return err
	}
	if interp != "" {
		real, err := filepath.EvalSymlinks(interp)
		if err != nil {
			return fmt.Errorf("interpreter: %w", err)
		}
		r.interp = real
		r.add(File{Source: real, Path: interp, Mode: Executable})
	}
	return r.needed(binary, f)
}

// needed adds the DT_NEEDED libraries of one object, then theirs.
func (r *libraryResolver) needed(object string, f *elf.File) error {
	names, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", object, err)
	}
	dirs, err := runPath(object, f)
	if err != nil {
		return err
	}
	search := append(dirs, libraryDirs...)
	for _, name := range names {
		found, real, err := findLibrary(name, search)
		if err != nil {
			return fmt.Errorf("%s (needed by %s): %w", name, object, err)
		}
		// The loader satisfies a dependency on itself without a search.
		if real == r.interp || r.seen[found] {
			continue
		}
		r.add(File{Source: real, Path: found, Mode: Executable})
		lib, err := elf.Open(real)
		if err != nil {
			return err
		}
		err = r.needed(found, lib)
		lib.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *libraryResolver) add(f File) {
	r.seen[f.Path] = true
	r.files = append(r.files, f)
}

// interpreter reads PT_INTERP; empty for static binaries.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("reading the interpreter: %w", err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// runPath returns the object's DT_RUNPATH (or, without one, DT_RPATH) with $ORIGIN
// expanded, as the loader searches them before the default directories.
func runPath(object string, f *elf.File) ([]string, error) {
	entries, err := f.DynString(elf.DT_RUNPATH)
	if err == nil && len(entries) == 0 {
		entries, err = f.DynString(elf.DT_RPATH)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", object, err)
	}
	origin := path.Dir(object)
	var dirs []string
	for _, e := range entries {
		for _, d := range strings.Split(e, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs, nil
}

// findLibrary returns where the loader would find a library (the path the image
// needs) and the regular file behind it (what to copy). Like the loader, it skips
// files of another architecture.
func findLibrary(name string, dirs []string) (found, real string, err error) {
	if strings.Contains(name, "/") {
		dirs, name = []string{path.Dir(name)}, path.Base(name)
	}
	for _, dir := range dirs {
		candidate := path.Join(dir, name)
		real, err := filepath.EvalSymlinks(candidate)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", "", err
		}
		if !isX8664(real) {
			continue
		}
		return candidate, real, nil
	}
	return "", "", fmt.Errorf("not found in %s", strings.Join(dirs, ", "))
}

func isX8664(name string) bool {
	f, err := elf.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Machine == elf.EM_X86_64 && f.Class == elf.ELFCLASS64
}
