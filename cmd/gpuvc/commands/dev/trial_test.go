package dev

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

// notRoot stands for a machine where the Docker-less trial cannot run.
func notRoot() string { return "not root: a real node needs root" }

func runTrial(docker func(context.Context) error, args ...string) (stdout, stderr string, code int) {
	return runTrialIn(trialEnv{docker: docker, local: notRoot}, args...)
}

func runTrialIn(env trialEnv, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	cmd := newTrialCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, env)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(&out)
	cmd.SetErr(&errOut) // as the root command does: cli.Run prints the error there
	cmd.SetArgs(args)
	code = cli.Run(cmd)
	return out.String(), errOut.String(), code
}

func noDocker(context.Context) error {
	return errors.New("docker version: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
}

// `make trial` on a machine without a Docker engine and without root: check and
// up stop at once with exit code 2, saying what each trial needs; down succeeds.
func TestTrialWithoutDockerOrRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "trial")
	for _, args := range [][]string{{"check"}, {"up", "--dir", dir, "--image", "ghcr.io/gpuvc/gpuvc:dev"}} {
		out, errOut, code := runTrial(noDocker, args...)
		if code != exitNoDocker || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
		for _, want := range []string{"no Docker engine answers", "Cannot connect to the Docker daemon", "not root", "sudo make trial", "make binaries", "a Docker engine that answers"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, errOut)
			}
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("up without Docker created %s", dir)
	}
	if _, errOut, code := runTrial(func(context.Context) error { return nil }, "up", "--local", "--dir", dir); code != exitNoDocker || !strings.Contains(errOut, "not root") {
		t.Errorf("up --local when not root: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code := runTrial(noDocker, "down", "--dir", dir)
	if code != 0 || !strings.Contains(errOut, "nothing to delete") {
		t.Errorf("down: exit %d, stderr %q", code, errOut)
	}
}

func TestTrialCheckWithDocker(t *testing.T) {
	_, errOut, code := runTrial(func(context.Context) error { return nil }, "check")
	if code != 0 || !strings.Contains(errOut, "the kind trial can run here") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestTrialUpRefusesALatestImage(t *testing.T) {
	_, errOut, code := runTrial(func(context.Context) error { return nil }, "up", "--dir", t.TempDir(), "--image", "ghcr.io/gpuvc/gpuvc:latest")
	if code != 1 || !strings.Contains(errOut, "other than latest") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// Without Docker, as root, the trial is the Docker-less one: check says so on
// stdout (the Makefile reads it) and exits 0.
func TestTrialCheckWithoutDockerAsRoot(t *testing.T) {
	out, errOut, code := runTrialIn(trialEnv{docker: noDocker, local: func() string { return "" }}, "check")
	if code != 0 || out != "local\n" || !strings.Contains(errOut, "real node") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = runTrialIn(trialEnv{docker: func(context.Context) error { return nil }, local: func() string { return "" }}, "check")
	if code != 0 || out != "kind\n" {
		t.Errorf("with Docker: exit %d, stdout %q", code, out)
	}
}
