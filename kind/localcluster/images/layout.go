package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// Kinds of layer entries.
const (
	kindDir     = "dir"
	kindFile    = "file"
	kindSymlink = "symlink"
)

// entry is one file-system object of the layer, in the form that is both hashed
// into the cache key and written as a tar header. Host paths stay out of the key:
// the same content read from another place gives the same image.
type entry struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Mode   int64  `json:"mode"`
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`
	Target string `json:"target,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Digest string `json:"digest,omitempty"`

	source  string
	content []byte
}

// layout turns the declared files, directories and symlinks into the sorted list of
// layer entries, adding parent directories and hashing every file's content.
func layout(files []File, dirs []Dir, links []Symlink) ([]entry, error) {
	byPath := map[string]entry{}
	add := func(e entry) error {
		p, err := imagePath(e.Path)
		if err != nil {
			return err
		}
		if _, dup := byPath[p]; dup {
			return fmt.Errorf("%s is declared twice", p)
		}
		e.Path = p
		byPath[p] = e
		return nil
	}
	for _, d := range dirs {
		mode := d.Mode
		if mode == 0 {
			mode = 0o755
		}
		if err := add(entry{Path: d.Path, Kind: kindDir, Mode: mode, UID: d.UID, GID: d.GID}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		e, err := fileEntry(f)
		if err != nil {
			return nil, err
		}
		if err := add(e); err != nil {
			return nil, err
		}
	}
	for _, l := range links {
		if l.Target == "" {
			return nil, fmt.Errorf("symlink %s has no target", l.Path)
		}
		if err := add(entry{Path: l.Path, Kind: kindSymlink, Mode: 0o777, Target: l.Target}); err != nil {
			return nil, err
		}
	}
	if err := addParents(byPath); err != nil {
		return nil, err
	}

	entries := make([]entry, 0, len(byPath))
	for _, e := range byPath {
		entries = append(entries, e)
	}
	// A parent's path is a prefix of its children's, so it sorts first.
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return entries, nil
}

// imagePath checks that p is an absolute path below the root and cleans it.
func imagePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("image path %q is not absolute", p)
	}
	clean := path.Clean(p)
	if clean == "/" {
		return "", fmt.Errorf("image path %q is the root", p)
	}
	return clean, nil
}

// addParents creates the missing parent directories of every entry and refuses
// entries that would sit below a file or a symlink.
func addParents(byPath map[string]entry) error {
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	for _, p := range paths {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			parent, ok := byPath[dir]
			if !ok {
				byPath[dir] = entry{Path: dir, Kind: kindDir, Mode: 0o755}
				continue
			}
			if parent.Kind != kindDir {
				return fmt.Errorf("%s needs %s to be a directory, but it is a %s", p, dir, parent.Kind)
			}
		}
	}
	return nil
}

// fileEntry reads a file's size and content digest, from the host or from memory.
func fileEntry(f File) (entry, error) {
	mode := f.Mode
	if mode == 0 {
		mode = 0o644
	}
	e := entry{Path: f.Path, Kind: kindFile, Mode: mode, UID: f.UID, GID: f.GID}
	if f.Source == "" {
		if f.Content == nil {
			return entry{}, fmt.Errorf("%s has neither a source file nor content", f.Path)
		}
		sum := sha256.Sum256(f.Content)
		e.Size, e.Digest, e.content = int64(len(f.Content)), "sha256:"+hex.EncodeToString(sum[:]), f.Content
		return e, nil
	}
	size, digest, err := hashFile(f.Source)
	if err != nil {
		return entry{}, fmt.Errorf("input file for %s: %w", f.Path, err)
	}
	e.Size, e.Digest, e.source = size, digest, f.Source
	return e, nil
}

func hashFile(name string) (int64, string, error) {
	fh, err := os.Open(name)
	if err != nil {
		return 0, "", err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return 0, "", err
	}
	if !info.Mode().IsRegular() {
		return 0, "", fmt.Errorf("%s is not a regular file", name)
	}
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return 0, "", fmt.Errorf("reading %s: %w", name, err)
	}
	return n, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
