package trial

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/e2e/kindnode"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	kindtrial "github.com/gpuvc/gpuvc/kind/trial"
)

// kindTrialName is the cluster of TestKindTrialOffline, apart from `make trial`'s.
const kindTrialName = "gpuvc-trial-e2e"

// TestKindTrialOffline runs the kind trial end to end, through the same binary
// and command as `make trial` on a machine with Docker — `gpuvc dev trial up`,
// with what replaces registry access here: kind's node image built offline
// (GPUVC_KIND_NODE_IMAGE, set by `make e2e-kind`), every image from archives
// built in Go (--image-archive), vCluster's chart from the gpuvc image (-f). It
// checks the report, each team's pods Running through its kubeconfig file, and
// that `gpuvc dev trial down` leaves no container, volume or network of kind.
func TestKindTrialOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: a four-node kind cluster (minutes)")
	}
	nodeImage := os.Getenv("GPUVC_KIND_NODE_IMAGE")
	if nodeImage == "" {
		t.Skip("GPUVC_KIND_NODE_IMAGE is unset: `make e2e-kind` builds kind's node image offline and runs this")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	if err := localcp.EnsureAll(ctx, os.Stderr); err != nil {
		t.Fatal(err)
	}
	gpuvc := gpuvcbin.BuildForTest(t, ctx)
	m, err := localcluster.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	tars, err := images.ForRealNode(m, gpuvc, images.DefaultDir())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if tars, err = kindnode.PinArchives(work, tars); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(work, "values.yaml")
	b, err := yaml.Marshal(kindtrial.BuiltImageValues())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(values, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, "trial")
	args := []string{"dev", "trial", "up", "--name", kindTrialName, "--dir", dir, "--image", images.GpuvcRef,
		"--node-image", nodeImage, "--workload-image", images.WorkloadRef, "-f", values, "--timeout", "10m"}
	for _, tar := range tars {
		args = append(args, "--image-archive", tar)
	}
	began := time.Now()
	out, errOut, err := gpuvcbin.Run(ctx, gpuvc, args...)
	t.Cleanup(func() { kindDown(t, gpuvc, dir) })
	if err != nil {
		t.Fatalf("trial up: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("trial up took %v; report:\n%s", time.Since(began).Round(time.Second), out)

	if !strings.Contains(out, "gpuvc trial is up on kind cluster "+kindTrialName) {
		t.Errorf("report does not say where the trial runs:\n%s", out)
	}
	for _, row := range []string{
		`vision\s+train\s+nvidia\.com/gpu: 1\s+team-vision/train-x-default-x-vision\s+a100-0\s+nvidia\.com/gpu: 1\s+GPU-sim-`,
		`vision\s+notebook\s+nvidia\.com/mig-1g\.10gb: 1\s+team-vision/notebook-x-default-x-vision\s+a100-0\s+nvidia\.com/mig-1g\.10gb: 1\s+MIG-sim-`,
		`llm\s+train\s+nvidia\.com/gpu: 1\s+team-llm/train-x-default-x-llm\s+h100-0\s+nvidia\.com/gpu: 1\s+GPU-sim-`,
	} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("report lacks a row matching %s", row)
		}
	}
	demoPodsRun(ctx, t, dir, demoPods)
}

// kindDown runs `gpuvc dev trial down` and checks that no container or volume of
// the trial's cluster is left, nor kind's network once no kind cluster remains.
func kindDown(t *testing.T, gpuvc, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	byTrial := "label=io.x-k8s.kind.cluster=" + kindTrialName
	// The nodes' anonymous volumes (kind mounts one on /var): docker ps lists
	// each container's mounts by name, comma-separated, binds among them.
	mounts, _, _ := gpuvcbin.Run(ctx, "docker", "ps", "-a", "--no-trunc", "--filter", byTrial, "--format", "{{.Mounts}}")
	var volumes []string
	for _, m := range strings.FieldsFunc(mounts, func(r rune) bool { return r == ',' || r == '\n' }) {
		if _, _, err := gpuvcbin.Run(ctx, "docker", "volume", "inspect", m); err == nil {
			volumes = append(volumes, m)
		}
	}
	began := time.Now()
	if _, errOut, err := gpuvcbin.Run(ctx, gpuvc, "dev", "trial", "down", "--name", kindTrialName, "--dir", dir); err != nil {
		t.Errorf("trial down: %v\n%s", err, errOut)
	}
	t.Logf("trial down took %v", time.Since(began).Round(time.Second))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("down left %s (%v)", dir, err)
	}
	if left, _, _ := gpuvcbin.Run(ctx, "docker", "ps", "-a", "-q", "--filter", byTrial); strings.TrimSpace(left) != "" {
		t.Errorf("down left containers %s", strings.Fields(left))
	}
	for _, v := range volumes {
		if _, _, err := gpuvcbin.Run(ctx, "docker", "volume", "inspect", v); err == nil {
			t.Errorf("down left volume %s", v)
		}
	}
	if others, _, _ := gpuvcbin.Run(ctx, "docker", "ps", "-a", "-q", "--filter", "label=io.x-k8s.kind.cluster"); strings.TrimSpace(others) == "" {
		if left, _, _ := gpuvcbin.Run(ctx, "docker", "network", "ls", "-q", "--filter", "name=^kind$"); strings.TrimSpace(left) != "" {
			t.Errorf("down left kind's network with no kind cluster left")
		}
	}
}
