package images_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

func TestBuildWritesTheDeclaredLayout(t *testing.T) {
	bin := standIn(t, "tool")
	spec := images.Spec{
		Ref: "example.test/tool:1",
		Files: []images.File{
			{Source: bin, Path: "/usr/bin/tool", Mode: images.Executable},
			{Content: []byte("hello\n"), Path: "/etc/greeting"},
		},
		Dirs:       []images.Dir{{Path: "/tmp", Mode: 0o1777}, {Path: "/home/app", Mode: 0o700, UID: 1000, GID: 1000}},
		Symlinks:   []images.Symlink{{Path: "/bin/tool", Target: "../usr/bin/tool"}},
		Entrypoint: []string{"/usr/bin/tool"},
		Cmd:        []string{"--help"},
		Env:        []string{"PATH=/usr/bin"},
		User:       "1000:1000",
		WorkingDir: "/home/app",
	}
	img := build(t, spec)

	want := images.Spec{Entrypoint: spec.Entrypoint, Cmd: spec.Cmd, Env: spec.Env, User: spec.User, WorkingDir: spec.WorkingDir}
	got := images.Spec{Entrypoint: img.config.Entrypoint, Cmd: img.config.Cmd, Env: img.config.Env, User: img.config.User, WorkingDir: img.config.WorkingDir}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	img.requireFile(t, "/usr/bin/tool", 0o755)
	img.requireFile(t, "/etc/greeting", 0o644)
	img.requireDir(t, "/usr", 0o755, 0) // implicit parent
	img.requireDir(t, "/tmp", 0o1777, 0)
	img.requireDir(t, "/home/app", 0o700, 1000)
	img.requireSymlink(t, "/bin/tool", "../usr/bin/tool")
	for p, hdr := range img.entries {
		require.Zero(t, hdr.ModTime.Unix(), "%s has a build-dependent time", p)
	}
}

func TestBuildIsDeterministicAndCached(t *testing.T) {
	bin := standIn(t, "tool")
	spec := images.Spec{
		Ref:        "example.test/tool:1",
		Files:      []images.File{{Source: bin, Path: "/tool", Mode: images.Executable}},
		Entrypoint: []string{"/tool"},
	}

	dir := t.TempDir()
	first, err := images.Build(spec, dir)
	require.NoError(t, err)
	again, err := images.Build(spec, dir)
	require.NoError(t, err)
	require.Equal(t, first, again, "same inputs, same cache entry")

	// Another folder, and the input read from another place: same image.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	content, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(moved, content, 0o600))
	spec.Files[0].Source = moved
	elsewhere, err := images.Build(spec, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, filepath.Base(first), filepath.Base(elsewhere))
	require.Equal(t, load(t, first, spec.Ref).digest(t), load(t, elsewhere, spec.Ref).digest(t))

	// Changed content: a new entry (archivecache_test.go covers when the old
	// one is removed).
	firstDigest := load(t, first, spec.Ref).digest(t)
	require.NoError(t, os.WriteFile(moved, []byte("new build\n"), 0o600))
	changed, err := images.Build(spec, dir)
	require.NoError(t, err)
	require.NotEqual(t, first, changed)
	require.NotEqual(t, firstDigest, load(t, changed, spec.Ref).digest(t))

	// Changed config only: a new entry too.
	spec.Env = []string{"A=b"}
	withEnv, err := images.Build(spec, dir)
	require.NoError(t, err)
	require.NotEqual(t, changed, withEnv)
}

func TestBuildRejectsBadSpecs(t *testing.T) {
	bin := standIn(t, "tool")
	missing := filepath.Join(t.TempDir(), "no-such-vcluster")
	cases := map[string]struct {
		spec images.Spec
		want []string // substrings of the error
	}{
		"missing input file": {
			spec: images.Spec{Ref: "example.test/x:1", Files: []images.File{{Source: missing, Path: "/vcluster"}}},
			want: []string{"example.test/x:1", "/vcluster", missing},
		},
		"input path not set": {
			spec: images.VCluster(images.VClusterInputs{}),
			want: []string{images.VClusterRef, "/vcluster", "neither a source file nor content"},
		},
		"missing binary for libraries": {
			spec: images.Spec{Ref: "example.test/x:1", LibrariesOf: []string{missing}},
			want: []string{missing},
		},
		"no tag": {
			spec: images.Spec{Ref: "example.test/x"},
			want: []string{"has no tag"},
		},
		"relative path": {
			spec: images.Spec{Ref: "example.test/x:1", Dirs: []images.Dir{{Path: "tmp"}}},
			want: []string{`"tmp" is not absolute`},
		},
		"declared twice": {
			spec: images.Spec{Ref: "example.test/x:1",
				Files:    []images.File{{Source: bin, Path: "/bin/sh"}},
				Symlinks: []images.Symlink{{Path: "/bin/sh", Target: "busybox"}}},
			want: []string{"/bin/sh is declared twice"},
		},
		"entry below a file": {
			spec: images.Spec{Ref: "example.test/x:1",
				Files: []images.File{{Source: bin, Path: "/tool"}, {Content: []byte{}, Path: "/tool/x"}}},
			want: []string{"/tool/x needs /tool to be a directory"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := images.Build(tc.spec, t.TempDir())
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}
