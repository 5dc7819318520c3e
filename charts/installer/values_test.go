package installer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/charts"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMergeValues: files merge deeply in order, then --set-json, --set and
// --set-string override, each typed as Helm types it.
func TestMergeValues(t *testing.T) {
	base := writeFile(t, "base.yaml", "manager:\n  replicas: 3\n  nodeSelector: {gpuvc.dev/pool: system}\nimage:\n  tag: \"1.0\"\n")
	prod := writeFile(t, "prod.yaml", "manager:\n  replicas: 4\ncertManager:\n  enabled: false\n")
	cases := map[string]struct {
		src  ValueSources
		want map[string]any
	}{
		"nothing": {ValueSources{}, map[string]any{}},
		"later file wins, maps merge": {ValueSources{Files: []string{base, prod}}, map[string]any{
			"manager":     map[string]any{"replicas": float64(4), "nodeSelector": map[string]any{"gpuvc.dev/pool": "system"}},
			"image":       map[string]any{"tag": "1.0"},
			"certManager": map[string]any{"enabled": false},
		}},
		"--set over files, typed": {ValueSources{Files: []string{base}, Set: []string{"manager.replicas=1,agent.enabled=false"}}, map[string]any{
			"manager": map[string]any{"replicas": int64(1), "nodeSelector": map[string]any{"gpuvc.dev/pool": "system"}},
			"image":   map[string]any{"tag": "1.0"},
			"agent":   map[string]any{"enabled": false},
		}},
		"--set-string keeps strings, wins over --set": {ValueSources{Set: []string{"image.tag=2"}, SetString: []string{"image.tag=3"}}, map[string]any{
			"image": map[string]any{"tag": "3"},
		}},
		"--set-json before --set": {ValueSources{
			SetJSON: []string{`manager.tolerations=[{"operator":"Exists"}]`, `manager.replicas=5`},
			Set:     []string{"manager.replicas=2"},
		}, map[string]any{
			"manager": map[string]any{"tolerations": []any{map[string]any{"operator": "Exists"}}, "replicas": int64(2)},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.src.Merge()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("merged values (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMergeValuesErrorsNameTheFlag: every error names the flag and the entry.
func TestMergeValuesErrorsNameTheFlag(t *testing.T) {
	good := writeFile(t, "good.yaml", "manager: {replicas: 1}\n")
	bad := writeFile(t, "bad.yaml", "manager: [\n")
	cases := map[string]struct {
		src  ValueSources
		want []string
	}{
		"missing file":   {ValueSources{Files: []string{good, "/no/such.yaml"}}, []string{`-f/--values "/no/such.yaml"`, "no such file"}},
		"not YAML":       {ValueSources{Files: []string{bad}}, []string{`-f/--values "` + bad + `"`, "failed to parse"}},
		"--set no value": {ValueSources{Set: []string{"manager.replicas=1", "agent.enabled"}}, []string{`--set "agent.enabled"`, `key "enabled" has no value`, "want KEY=VALUE"}},
		"--set-json":     {ValueSources{SetJSON: []string{"manager.tolerations=[{"}}, []string{`--set-json "manager.tolerations=[{"`, "want KEY=JSON"}},
		"--set-string":   {ValueSources{SetString: []string{"image.tag"}}, []string{`--set-string "image.tag"`, "want KEY=VALUE"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.src.Merge()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestCheckValuesNamesKeyAndValue: schema refusals come back as --set keys with the
// value given, nothing of jsonschema's pointer syntax, every problem listed.
func TestCheckValuesNamesKeyAndValue(t *testing.T) {
	ch, err := charts.Chart()
	if err != nil {
		t.Fatal(err)
	}
	vals, err := ValueSources{Set: []string{
		"manager.replica=3", "certManager.issuerRef.kind=Foo", "manager.replicas=abc",
	}, SetJSON: []string{`manager.tolerations=[{"effect":"Sometimes"}]`}}.Merge()
	if err != nil {
		t.Fatal(err)
	}
	err = CheckValues(ch, vals)
	var ve *ValuesError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *ValuesError", err)
	}
	got := map[string]ValueProblem{}
	for _, p := range ve.Problems {
		got[p.Key] = p
	}
	want := map[string]struct {
		value   any
		message string
	}{
		"manager":                       {nil, "additional properties 'replica' not allowed"},
		"manager.replicas":              {"abc", "got string, want integer"},
		"certManager.issuerRef.kind":    {"Foo", "value must be one of 'Issuer', 'ClusterIssuer'"},
		"manager.tolerations[0].effect": {"Sometimes", "value must be one of"},
	}
	for key, w := range want {
		p, ok := got[key]
		if !ok {
			t.Errorf("no problem reported for %s; got %+v", key, ve.Problems)
			continue
		}
		if p.Value != w.value || !strings.Contains(p.Message, w.message) {
			t.Errorf("%s: got value %v message %q, want %v and %q", key, p.Value, p.Message, w.value, w.message)
		}
	}
	msg := err.Error()
	for _, s := range []string{`certManager.issuerRef.kind="Foo": value must be one of`, `manager.replicas="abc"`, "--set"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message does not say %q:\n%s", s, msg)
		}
	}
	for _, s := range []string{"at '/", "validation failed", "file:///"} {
		if strings.Contains(msg, s) {
			t.Errorf("message still has jsonschema's %q:\n%s", s, msg)
		}
	}

	if err := CheckValues(ch, map[string]any{"manager": map[string]any{"replicas": 1}}); err != nil {
		t.Errorf("valid values refused: %v", err)
	}
}

func TestLookup(t *testing.T) {
	vals := map[string]any{
		"manager": map[string]any{
			"tolerations": []any{map[string]any{"effect": "X"}},
			"podLabels":   map[string]any{"example.com/team": "a"},
			"replicas":    2,
		},
	}
	cases := []struct {
		pointer, key string
		value        any
		scalar       bool
	}{
		{"", "", nil, false},
		{"/manager", "manager", nil, false},
		{"/manager/replicas", "manager.replicas", 2, true},
		{"/manager/tolerations/0/effect", "manager.tolerations[0].effect", "X", true},
		{"/manager/podLabels/example.com~1team", `manager.podLabels.example\.com/team`, "a", true},
		{"/manager/nothing/deeper", "manager.nothing.deeper", nil, false},
		{"/manager/tolerations/7", "manager.tolerations[7]", nil, false},
	}
	for _, tc := range cases {
		key, value, scalar := lookup(vals, tc.pointer)
		if key != tc.key || value != tc.value || scalar != tc.scalar {
			t.Errorf("lookup(%q) = %q, %v, %t; want %q, %v, %t", tc.pointer, key, value, scalar, tc.key, tc.value, tc.scalar)
		}
	}
}

// TestOverlay: over wins, maps merge deeply, and neither argument changes
// (Helm's CoalesceTables writes into its arguments).
func TestOverlay(t *testing.T) {
	base := map[string]any{"manager": map[string]any{"replicas": 3, "nodeSelector": map[string]any{"gpuvc.dev/pool": "system"}}}
	over := map[string]any{"manager": map[string]any{"replicas": 1}, "agent": map[string]any{"enabled": false}}
	baseBefore, overBefore := copyValues(base), copyValues(over)

	got := Overlay(base, over)

	want := map[string]any{
		"manager": map[string]any{"replicas": 1, "nodeSelector": map[string]any{"gpuvc.dev/pool": "system"}},
		"agent":   map[string]any{"enabled": false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("overlay (-want +got):\n%s", diff)
	}
	got["manager"].(map[string]any)["nodeSelector"].(map[string]any)["x"] = "y"
	if diff := cmp.Diff(baseBefore, base); diff != "" {
		t.Errorf("base changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(overBefore, over); diff != "" {
		t.Errorf("over changed (-before +after):\n%s", diff)
	}
}
