package localcp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// TestProgressAndManifest builds a tiny wrapper module twice: the first run prints
// a start and a done line numbered 1 of 1 with the elapsed time and what is left,
// the second finds it cached; both list the binary in the manifest.
func TestProgressAndManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	t.Setenv("GPUVC_CACHE_DIR", t.TempDir())
	tools := t.TempDir()
	t.Setenv("GPUVC_LOCALCP_TOOLS", tools)
	mod := filepath.Join(tools, "hello")
	if err := os.MkdirAll(filepath.Join(mod, "cmd", "hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"go.mod":            "module example.com/hello\n\ngo 1.22\n",
		"go.sum":            "",
		"cmd/hello/main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb := toolBuild{name: "hello", version: "v1.0.0", packages: []string{"example.com/hello/cmd/hello"}, ldflags: "-s -w"}
	var log bytes.Buffer
	dir, err := ensureTools(context.Background(), []toolBuild{tb}, newProgress(&log, 1))
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, want := range []string{
		`(?m)^binaries: \[1/1\] building hello v1\.0\.0 \(hello\) into .* — first run only; \d+s elapsed, 0 after this$`,
		`(?m)^binaries: \[1/1\] built hello v1\.0\.0 in \d+s.*; \d+s elapsed, 0 left$`,
	} {
		if !regexp.MustCompile(want).MatchString(log.String()) {
			t.Errorf("progress lacks %s:\n%s", want, log.String())
		}
	}
	log.Reset()
	if _, err := ensureTools(context.Background(), []toolBuild{tb}, newProgress(&log, 1)); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(log.String()); got != "binaries: [1/1] hello v1.0.0 cached (hello)" {
		t.Errorf("second run printed %q", got)
	}
	m, err := localcluster.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Tools["hello"], (localcluster.Tool{Path: filepath.Join(dir["hello"], "hello"), Version: "v1.0.0"}); got != want {
		t.Errorf("manifest entry = %+v, want %+v", got, want)
	}
}
