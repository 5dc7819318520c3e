package trial

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ErrNoDocker is returned (wrapped, with what to use instead) when no Docker
// engine answers: kind runs every node as a Docker container.
var ErrNoDocker = errors.New("no Docker engine answers")

// DockerCheck reports why no Docker engine can be used, nil when one answers.
type DockerCheck func(ctx context.Context) error

// DockerEngine asks the docker CLI for the engine's version: the CLI alone (as on
// machines whose engine is stopped or absent) is not enough.
func DockerEngine(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return errors.New("the docker command is not on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if line := firstLine(out.String()); line != "" {
			return fmt.Errorf("docker version: %s", line)
		}
		return fmt.Errorf("docker version: %w", err)
	}
	return nil
}

// RequireDocker runs the check and, when it fails, says what this machine can run
// instead of the kind trial.
func RequireDocker(ctx context.Context, check DockerCheck) error {
	if check == nil {
		check = DockerEngine
	}
	err := check(ctx)
	if err == nil {
		return nil
	}
	return fmt.Errorf(`%w (%v): the kind trial runs every node as a Docker container and cannot start here.
Without Docker, gpuvc runs on this machine's own control plane instead:
  bin/gpuvc dev cluster up     # real kube-apiserver, scheduler and controller-manager; kwok GPU nodes
                               # (pods are only marked Running; see README "Two commands")
  make e2e                     # the end-to-end suite on the local control plane, with a real node
                               # (kubelet, containerd, simulated GPUs) where it runs as root
See docs/trial.md`, ErrNoDocker, err)
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// dockerSave writes image from the local Docker engine into a docker-archive
// tarball, as `kind load docker-image` does, and returns its path.
func dockerSave(ctx context.Context, image, dir string) (string, error) {
	var out bytes.Buffer
	inspect := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", image)
	inspect.Stdout, inspect.Stderr = &out, &out
	if err := inspect.Run(); err != nil {
		return "", fmt.Errorf("image %s is not in the local Docker engine (%s): build it first with `make image IMAGE=%s`", image, firstLine(out.String()), image)
	}
	f, err := os.CreateTemp(dir, "image-*.tar")
	if err != nil {
		return "", err
	}
	f.Close()
	out.Reset()
	save := exec.CommandContext(ctx, "docker", "save", "-o", f.Name(), image)
	save.Stdout, save.Stderr = &out, &out
	if err := save.Run(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("docker save %s: %v: %s", image, err, firstLine(out.String()))
	}
	return f.Name(), nil
}

// kindNetwork is the Docker network kind creates for its nodes and keeps after
// deleting a cluster.
const kindNetwork = "kind"

// removeKindNetwork removes kind's Docker network once no kind cluster is left
// (kind itself keeps it), so that down leaves no network behind; with other
// clusters, or none of kind's network, it does nothing.
func removeKindNetwork(ctx context.Context, p interface{ List() ([]string, error) }, log *progress) error {
	left, err := p.List()
	if err != nil {
		return fmt.Errorf("listing kind clusters: %w", err)
	}
	if len(left) > 0 {
		log.printf("kind clusters %v remain: keeping Docker network %s", left, kindNetwork)
		return nil
	}
	var out bytes.Buffer
	inspect := exec.CommandContext(ctx, "docker", "network", "inspect", kindNetwork)
	inspect.Stdout, inspect.Stderr = &out, &out
	if inspect.Run() != nil {
		return nil // no network: nothing to remove
	}
	out.Reset()
	rm := exec.CommandContext(ctx, "docker", "network", "rm", kindNetwork)
	rm.Stdout, rm.Stderr = &out, &out
	if err := rm.Run(); err != nil {
		return fmt.Errorf("docker network rm %s: %v: %s", kindNetwork, err, firstLine(out.String()))
	}
	log.printf("Docker network %s removed (no kind cluster left)", kindNetwork)
	return nil
}
