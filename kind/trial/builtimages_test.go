package trial

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// Without the prebuilt binaries the built-images trial stops before anything is
// created and says how to get them; with archives given as well it refuses.
func TestUseBuiltImagesRefusals(t *testing.T) {
	t.Setenv("GPUVC_CACHE_DIR", t.TempDir())
	opts := Options{Image: "example.test/gpuvc:1"}
	err := UseBuiltImages(&opts, "/bin/true")
	if !errors.Is(err, localcluster.ErrNotBuilt) || !strings.Contains(err.Error(), "make binaries") {
		t.Errorf("without binaries: %v, want ErrNotBuilt naming make binaries", err)
	}
	if opts.Image != "example.test/gpuvc:1" || opts.ImageArchives != nil {
		t.Errorf("options changed by a refused call: %+v", opts)
	}
	opts.ImageArchives = []string{"x.tar"}
	if err := UseBuiltImages(&opts, "/bin/true"); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("with archives: %v, want a refusal", err)
	}
}

// The built images' values take vCluster's chart from the gpuvc image and run
// the loaded distro; values the user gave win.
func TestBuiltImageValuesYieldToTheUsers(t *testing.T) {
	got := installer.Overlay(BuiltImageValues(), map[string]any{"vcluster": map[string]any{"chart": map[string]any{"dir": "/mine"}}})
	vc := got["vcluster"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"dir": "/mine"}, vc["chart"]); diff != "" {
		t.Errorf("chart values (-want +got): the user's must win\n%s", diff)
	}
	tag := vc["values"].(map[string]any)["controlPlane"].(map[string]any)["distro"].(map[string]any)["k8s"].(map[string]any)["image"].(map[string]any)["tag"]
	if tag != localcluster.KubernetesVersion {
		t.Errorf("vCluster distro tag %v, want the loaded %s", tag, localcluster.KubernetesVersion)
	}
	if BuiltImageValues()["vcluster"].(map[string]any)["chart"].(map[string]any)["dir"] != images.VClusterChartInImage {
		t.Errorf("chart dir: want %s, the chart inside the gpuvc image", images.VClusterChartInImage)
	}
}
