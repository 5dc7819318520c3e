package kindnode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// Repository is where the node images built here are tagged, as
// Repository:<Kubernetes version>-<content key>.
const Repository = "gpuvc.local/kind-node"

// Build makes kind's node image offline and loads it into the Docker engine the
// docker CLI talks to (DOCKER_HOST), unless that engine has it already, and
// returns its reference. Every input is cached: binaries under the binaries
// cache, the Debian root file system under CacheDir, image archives under the
// images cache; a warm Build only hashes them and asks the engine.
func Build(ctx context.Context, log io.Writer) (string, error) {
	began := time.Now()
	in, err := ensureInputs(ctx, log)
	if err != nil {
		return "", err
	}
	base, err := ensureBase(ctx, log)
	if err != nil {
		return "", err
	}
	specs, err := nodeImages(in)
	if err != nil {
		return "", err
	}
	archives, err := buildImages(specs)
	if err != nil {
		return "", err
	}
	spec, err := nodeLayer(in, archives)
	if err != nil {
		return "", err
	}
	layer, err := images.Build(spec, images.DefaultDir())
	if err != nil {
		return "", fmt.Errorf("building the node's layer: %w", err)
	}
	key := sha256.Sum256([]byte(filepath.Base(base) + "|" + filepath.Base(layer)))
	ref := fmt.Sprintf("%s:%s-%s", Repository, localcluster.KubernetesVersion, hex.EncodeToString(key[:])[:12])
	if dockerHas(ctx, ref) {
		return ref, nil
	}
	fmt.Fprintf(log, "kind node: assembling %s and loading it into the Docker engine\n", ref)
	if err := load(ctx, ref, base, layer, log); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "kind node: %s ready in %v\n", ref, time.Since(began).Round(time.Second))
	removeOlder(ctx, ref)
	return ref, nil
}

// removeOlder removes the engine's other node images built here (~800 MB each);
// one a cluster still runs on stays (docker refuses).
func removeOlder(ctx context.Context, keep string) {
	out, err := exec.CommandContext(ctx, "docker", "images", Repository, "--format", "{{.Repository}}:{{.Tag}}").Output()
	if err != nil {
		return
	}
	for _, ref := range strings.Fields(string(out)) {
		if ref != keep {
			_ = exec.CommandContext(ctx, "docker", "rmi", ref).Run()
		}
	}
}

// ensureInputs builds (unless cached) every binary the node and its images carry.
func ensureInputs(ctx context.Context, log io.Writer) (inputs, error) {
	var in inputs
	var err error
	if in.cp, err = localcp.EnsureBinaries(ctx, log); err != nil {
		return in, err
	}
	if in.node, err = localcp.EnsureNodeBinaries(ctx, log); err != nil {
		return in, err
	}
	if in.img, err = localcp.EnsureImageBinaries(ctx, log); err != nil {
		return in, err
	}
	if in.kubeadm, err = localcp.EnsureKubeadm(ctx, log); err != nil {
		return in, err
	}
	m, err := localcluster.LoadManifest()
	if err != nil {
		return in, err
	}
	in.pause, err = m.File(localcluster.FilePause)
	return in, err
}

// load stacks the node's layer on the root file system, with the configuration
// kind's node images have (systemd as PID 1 behind the entrypoint, told it runs
// in a container, stopped by SIGRTMIN+3), and `docker load`s it.
func load(ctx context.Context, ref, base, layerArchive string, log io.Writer) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	baseLayer, err := tarball.LayerFromFile(base)
	if err != nil {
		return err
	}
	nodeImg, err := tarball.ImageFromPath(layerArchive, nil)
	if err != nil {
		return err
	}
	nodeLayers, err := nodeImg.Layers()
	if err != nil {
		return err
	}
	cfg := &v1.ConfigFile{
		Architecture: "amd64", OS: "linux",
		Config: v1.Config{
			Entrypoint: []string{"/usr/local/bin/entrypoint", "/sbin/init"},
			Env:        []string{"container=docker", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			StopSignal: "SIGRTMIN+3",
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return err
	}
	img, err = mutate.AppendLayers(img, append([]v1.Layer{baseLayer}, nodeLayers...)...)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(CacheDir(), ".node-*.tar")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := tarball.WriteToFile(tmp.Name(), tag, img); err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", "load", "-i", tmp.Name())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker load %s: %v: %s", ref, err, out.String())
	}
	fmt.Fprint(log, out.String())
	return nil
}

// dockerHas reports whether the Docker engine holds ref.
func dockerHas(ctx context.Context, ref string) bool {
	return exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() == nil
}
