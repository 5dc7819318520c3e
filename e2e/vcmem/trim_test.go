package vcmem

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/vclusters"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// TestVariantsRender: every variant's values pass vCluster's values schema and
// templates, and the trims reach the vcluster.yaml the chart writes.
func TestVariantsRender(t *testing.T) {
	src, err := vclusterstest.ChartSource(context.Background())
	if err != nil {
		t.Fatalf("vCluster chart from the module cache: %v", err)
	}
	for _, v := range variants {
		t.Run(v.Name, func(t *testing.T) {
			out, err := vclusters.Render(context.Background(), vclusters.Spec{
				Name: "mem", Namespace: "team-mem", Pool: "system",
				KubeconfigServer: "https://mem.example.com", Chart: src, ExtraValues: v.Values,
			})
			if err != nil {
				t.Fatal(err)
			}
			out += decodedConfig(t, out)
			for _, want := range []string{"--watch-cache=false", "--leader-elect=false", "GOGC"} {
				trimmed := v.Name != "default" && (want != "GOGC" || strings.HasPrefix(v.Name, "gogc"))
				if got := strings.Contains(out, want); got != trimmed {
					t.Errorf("rendered release mentions %s: %v, want %v", want, got, trimmed)
				}
			}
		})
	}
}

// decodedConfig is the vcluster.yaml the chart stores base64-encoded in the
// release's config Secret (the key config.yaml).
func decodedConfig(t *testing.T, manifests string) string {
	for _, line := range strings.Split(manifests, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "config.yaml: "); ok {
			b, err := base64.StdEncoding.DecodeString(strings.Trim(v, `"`))
			if err != nil {
				t.Fatalf("config.yaml of the config Secret: %v", err)
			}
			return string(b)
		}
	}
	t.Fatal("no config Secret (key config.yaml) in the rendered release")
	return ""
}
