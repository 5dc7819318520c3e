package localcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// fakeModule writes a wrapper module's go.mod and go.sum into a temporary folder.
func fakeModule(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{
		"go.mod": "module example.com/tools/x\n\ngo 1.26.0\n",
		"go.sum": "example.com/y v1.0.0 h1:abc=\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustKey(t *testing.T, tb toolBuild, modDir string) string {
	t.Helper()
	key, err := cacheKey(tb, modDir)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestCacheKey(t *testing.T) {
	modDir := fakeModule(t)
	base := toolBuild{name: "x", version: "v1.0.0", packages: []string{"example.com/y/cmd/y"}, ldflags: "-s -w"}
	with := func(change func(*toolBuild)) toolBuild {
		tb := base
		tb.packages = slices.Clone(base.packages)
		change(&tb)
		return tb
	}
	variants := map[string]toolBuild{
		"base":            base,
		"module folder":   with(func(tb *toolBuild) { tb.module = "other" }),
		"env cgo off":     with(func(tb *toolBuild) { tb.env = []string{"CGO_ENABLED=0"} }),
		"env cgo on":      with(func(tb *toolBuild) { tb.env = []string{"CGO_ENABLED=1"} }),
		"tag a":           with(func(tb *toolBuild) { tb.tags = []string{"a"} }),
		"tag b":           with(func(tb *toolBuild) { tb.tags = []string{"b"} }),
		"tags a b":        with(func(tb *toolBuild) { tb.tags = []string{"a", "b"} }),
		"tags in one tag": with(func(tb *toolBuild) { tb.tags = []string{"a,b"} }),
		"env as tag":      with(func(tb *toolBuild) { tb.tags = []string{"CGO_ENABLED=0"} }),
		"ldflags":         with(func(tb *toolBuild) { tb.ldflags = "-s" }),
		"packages":        with(func(tb *toolBuild) { tb.packages = append(tb.packages, "example.com/y/cmd/z") }),
	}
	seen := map[string]string{}
	for name, tb := range variants {
		key := mustKey(t, tb, modDir)
		if other, dup := seen[key]; dup {
			t.Errorf("%q and %q share the cache key %s", name, other, key)
		}
		seen[key] = name
		if again := mustKey(t, tb, modDir); again != key {
			t.Errorf("%q: key changed between calls: %s, then %s", name, key, again)
		}
	}

	if a, b := mustKey(t, with(func(tb *toolBuild) { tb.tags = []string{"a", "b"} }), modDir),
		mustKey(t, with(func(tb *toolBuild) { tb.tags = []string{"b", "a"} }), modDir); a != b {
		t.Errorf("tag order changed the key: %s vs %s", a, b)
	}
	if a, b := mustKey(t, base, modDir), mustKey(t, with(func(tb *toolBuild) { tb.module = base.name }), modDir); a != b {
		t.Errorf("naming the module folder after the build changed the key: %s vs %s", a, b)
	}
	if err := os.WriteFile(filepath.Join(modDir, "go.sum"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if key := mustKey(t, base, modDir); seen[key] != "" {
		t.Errorf("a changed go.sum kept the key %s", key)
	}
}

// TestCacheKeyOfPlainBuildsUnchanged guards the cached control-plane binaries: a
// build without module folder, env or tags keeps the key it had before those existed.
func TestCacheKeyOfPlainBuildsUnchanged(t *testing.T) {
	modDir := fakeModule(t)
	tb := toolBuild{name: "x", version: "v1.0.0", packages: []string{"example.com/y/cmd/y"}, ldflags: "-s -w"}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(modDir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	fmt.Fprintf(h, "%v|%s|%s", tb.packages, tb.ldflags, runtime.Version())
	want := "x-v1.0.0-" + hex.EncodeToString(h.Sum(nil))[:12]
	if got := mustKey(t, tb, modDir); got != want {
		t.Errorf("cacheKey = %s, want the old key %s", got, want)
	}
}

// TestToolBuilds checks the build table: unique names, existing wrapper modules,
// distinct keys, static image builds.
func TestToolBuilds(t *testing.T) {
	all := slices.Concat(toolBuilds(), nodeBuilds(), imageBuilds())
	names, keys := map[string]bool{}, map[string]string{}
	for _, tb := range all {
		if names[tb.name] {
			t.Errorf("two builds are named %q", tb.name)
		}
		names[tb.name] = true
		modDir := filepath.Join(ToolsDir(), tb.moduleDir())
		if gomod, err := os.ReadFile(filepath.Join(modDir, "go.mod")); err != nil {
			t.Error(err)
		} else if !strings.Contains(string(gomod), " "+tb.version+" ") {
			t.Errorf("%s: %s/go.mod requires nothing at %s", tb.name, modDir, tb.version)
		}
		key := mustKey(t, tb, modDir)
		if other, dup := keys[key]; dup {
			t.Errorf("%s and %s share the cache key %s", tb.name, other, key)
		}
		keys[key] = tb.name
		t.Logf("%s: %s", tb.name, key)
	}
	for _, tb := range imageBuilds() {
		static := slices.Contains(tb.env, "CGO_ENABLED=0") ||
			slices.Contains(tb.env, "CGO_ENABLED=1") && strings.Contains(tb.ldflags, "-extldflags -static") &&
				slices.Contains(tb.tags, "netgo") && slices.Contains(tb.tags, "osusergo")
		if !static {
			t.Errorf("%s goes into an image without libc but is not built static", tb.name)
		}
	}
	args := goBuildArgs(toolBuild{packages: []string{"p"}, ldflags: "-s", tags: []string{"a", "b"}}, "/out")
	if want := []string{"build", "-trimpath", "-tags", "a,b", "-ldflags", "-s", "-o", "/out/", "p"}; !slices.Equal(args, want) {
		t.Errorf("goBuildArgs = %q, want %q", args, want)
	}
}
