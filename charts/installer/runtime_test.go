package installer

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/charts"
)

// coalesce is the chart's defaults under values, as Install sees them.
func coalesce(t *testing.T, values string) map[string]any {
	t.Helper()
	ch, err := charts.Chart()
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	c, err := checkValues(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRuntimeNote(t *testing.T) {
	for name, tc := range map[string]struct {
		values   string // over the chart's defaults
		contains []string
	}{
		"defaults: fence": {contains: []string{"tainted gpuvc.dev/gpu-runtime-unsafe=true:NoSchedule", "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false",
			"ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true", "DEVICE_LIST_STRATEGY=volume-mounts", "agent.privileged=true", "Fractional GPU sharing"}},
		"warn":               {values: "agent: {gpuRuntime: {policy: warn}}", contains: []string{"but not tainted", "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false"}},
		"off":                {values: "agent: {gpuRuntime: {policy: \"off\"}}", contains: []string{"nothing checks"}},
		"agent off: no note": {values: "agent: {enabled: false}"},
		"simulated: no note": {values: "agent: {simulate: {a100: \"product=NVIDIA-A100-SXM4-80GB,count=8\"}}"},
	} {
		t.Run(name, func(t *testing.T) {
			vals := coalesce(t, tc.values)
			note := RuntimeNote(vals)
			if len(tc.contains) == 0 && note != "" {
				t.Fatalf("want no note, got %q", note)
			}
			if len(tc.contains) > 0 && note == "" {
				t.Fatal("no note")
			}
			for _, s := range tc.contains {
				if !strings.Contains(note, s) {
					t.Errorf("note %q does not contain %q", note, s)
				}
			}
		})
	}
}
