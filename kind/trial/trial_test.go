package trial

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func noEngine(context.Context) error {
	return errors.New("docker version: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
}

// Where no Docker engine answers, Start and Up stop before anything else, saying
// why and what to use instead; nothing is written.
func TestNoDockerEngineRefusesAtOnce(t *testing.T) {
	for name, run := range map[string]func(context.Context, Options) error{
		"Start": func(ctx context.Context, o Options) error { _, err := Start(ctx, o); return err },
		"Up":    func(ctx context.Context, o Options) error { _, err := Up(ctx, o); return err },
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "trial")
			var log bytes.Buffer
			err := run(context.Background(), Options{Dir: dir, Image: "ghcr.io/gpuvc/gpuvc:dev", Docker: noEngine, Log: &log})
			if !errors.Is(err, ErrNoDocker) {
				t.Fatalf("err = %v, want ErrNoDocker", err)
			}
			for _, want := range []string{
				"no Docker engine answers", "Cannot connect to the Docker daemon", // what and why
				"gpuvc dev cluster up", "make e2e", "docs/trial.md", // what instead
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message lacks %q:\n%v", want, err)
				}
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was created: %v", dir, err)
			}
			if log.Len() > 0 {
				t.Errorf("progress before the refusal: %s", log.String())
			}
		})
	}
}

// Bad options are reported first, without asking Docker.
func TestOptionsAreCheckedBeforeDocker(t *testing.T) {
	asked := false
	docker := func(context.Context) error { asked = true; return nil }
	for opts, want := range map[*Options]string{
		{Dir: t.TempDir(), Image: "ghcr.io/gpuvc/gpuvc:latest"}: "other than latest",
		{Image: "ghcr.io/gpuvc/gpuvc:dev"}:                      "Options.Dir",
	} {
		opts.Docker = docker
		if _, err := Start(context.Background(), *opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	if asked {
		t.Error("Docker was asked although the options were wrong")
	}
}

// Down is like rm -f: without Docker there is no cluster, and nothing fails.
func TestDownWithoutDockerSucceeds(t *testing.T) {
	var log bytes.Buffer
	if err := Down(context.Background(), Options{Dir: t.TempDir(), Docker: noEngine, Log: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "nothing to delete") {
		t.Errorf("log = %q", log.String())
	}
}

func TestRemoveFilesLeavesOtherFilesAlone(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Name: "t", Dir: dir}
	for _, f := range []string{opts.KubeconfigPath(), teamKubeconfigPath(dir, "vision"), filepath.Join(dir, "notes.txt")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeFiles(opts); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "notes.txt" {
		t.Errorf("left %v, want only notes.txt", entries)
	}
	os.Remove(filepath.Join(dir, "notes.txt"))
	if err := removeFiles(opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty folder kept: %v", err)
	}
}
