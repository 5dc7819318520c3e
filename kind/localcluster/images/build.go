package images

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// formatVersion is part of every cache key: bump it when the builder writes
// something different for the same spec, so stale tarballs are not reused.
const formatVersion = 1

// DefaultDir is the shared cache of image tarballs, next to the cached
// control-plane binaries.
func DefaultDir() string {
	return filepath.Join(localcluster.CacheDir(), "images")
}

// Build writes the image as a docker-archive tarball in dir and returns its path.
// The file name carries a hash of the spec and of every input file's content; when
// that file exists already, Build returns it after hashing the inputs, without
// writing anything. Archives of the same reference with other content are removed
// once nobody holds them (Hold) and nobody used them for KeepUnused.
func Build(spec Spec, dir string) (string, error) {
	tag, err := imageTag(spec.Ref)
	if err != nil {
		return "", err
	}
	if err := checkInputs(spec); err != nil {
		return "", fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	libs, err := librariesOf(spec.LibrariesOf, spec.Files)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	entries, err := layout(append(append([]File{}, spec.Files...), libs...), spec.Dirs, spec.Symlinks)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	cfg := configFile(spec)
	key, err := cacheKey(spec.Ref, cfg, entries)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, fileName(spec.Ref, key))
	if reuse(out) {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := writeImage(out, tag, cfg, entries); err != nil {
		return "", fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	removeOlder(dir, spec.Ref, out)
	return out, nil
}

// imageTag parses the reference and insists on an explicit tag: an implicit
// "latest" would hide a mistake in a chart's image name.
func imageTag(ref string) (name.Tag, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if !strings.HasSuffix(ref, ":"+tag.TagStr()) {
		return name.Tag{}, fmt.Errorf("image reference %q has no tag", ref)
	}
	return tag, nil
}

// checkInputs reports a missing input file by name before anything else reads it.
func checkInputs(spec Spec) error {
	for _, f := range spec.Files {
		if f.Source == "" && f.Content == nil {
			return fmt.Errorf("%s has neither a source file nor content", f.Path)
		}
		if f.Source == "" {
			continue
		}
		if _, err := os.Stat(f.Source); err != nil {
			return fmt.Errorf("input file for %s: %w", f.Path, err)
		}
	}
	for _, b := range spec.LibrariesOf {
		if b == "" {
			return fmt.Errorf("an empty path among the binaries whose libraries the image needs")
		}
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("binary whose libraries the image needs: %w", err)
		}
	}
	return nil
}

// librariesOf resolves the shared libraries of the given binaries, leaving out
// paths the spec declares itself.
func librariesOf(binaries []string, declared []File) ([]File, error) {
	taken := map[string]bool{}
	for _, f := range declared {
		taken[f.Path] = true
	}
	var libs []File
	for _, b := range binaries {
		found, err := SharedLibraries(b)
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			if !taken[f.Path] {
				taken[f.Path] = true
				libs = append(libs, f)
			}
		}
	}
	return libs, nil
}

func configFile(spec Spec) *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Config: v1.Config{
			Entrypoint: spec.Entrypoint,
			Cmd:        spec.Cmd,
			Env:        spec.Env,
			User:       spec.User,
			WorkingDir: spec.WorkingDir,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
}

func cacheKey(ref string, cfg *v1.ConfigFile, entries []entry) (string, error) {
	b, err := json.Marshal(struct {
		Format  int            `json:"format"`
		Ref     string         `json:"ref"`
		Config  *v1.ConfigFile `json:"config"`
		Entries []entry        `json:"entries"`
	}{formatVersion, ref, cfg, entries})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// fileName makes the reference readable in the cache folder:
// ghcr.io_loft-sh_vcluster-oss_0.36.1-<key>.tar.
func fileName(ref, key string) string {
	return strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(ref) + "-" + key[:16] + ".tar"
}

// writeImage writes the layer to a temporary file (layers can be hundreds of MB),
// builds the image around it and renames the finished tarball into place, so a
// crash never leaves a truncated tarball under the final name.
func writeImage(out string, tag name.Tag, cfg *v1.ConfigFile, entries []entry) error {
	dir := filepath.Dir(out)
	layerPath, err := writeLayerFile(dir, entries)
	if err != nil {
		return err
	}
	defer os.Remove(layerPath)

	layer, err := tarball.LayerFromFile(layerPath)
	if err != nil {
		return err
	}
	base, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return err
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{CreatedBy: "gpuvc e2e/images"},
	})
	if err != nil {
		return err
	}

	tmp, err := os.CreateTemp(dir, ".image-*.tar")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := tarball.WriteToFile(tmp.Name(), tag, img); err != nil {
		return err
	}
	// CreateTemp makes 0600 files; the importer may run as another user.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// writeLayerFile writes the layer compressed, once: handed a gzip file, the
// tarball writer copies it instead of compressing the layer twice (once for its
// digest, once for the archive).
func writeLayerFile(dir string, entries []entry) (string, error) {
	f, err := os.CreateTemp(dir, ".layer-*.tar.gz")
	if err != nil {
		return "", err
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	zw, err := gzip.NewWriterLevel(buf, gzip.BestSpeed)
	if err == nil {
		err = writeLayer(zw, entries)
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = buf.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
