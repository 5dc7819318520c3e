package vclusters

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMergeValues(t *testing.T) {
	cases := map[string]struct {
		base, over, want map[string]any
	}{
		"disjoint keys": {
			base: map[string]any{"a": 1},
			over: map[string]any{"b": 2},
			want: map[string]any{"a": 1, "b": 2},
		},
		"nested maps merge": {
			base: map[string]any{"a": map[string]any{"x": 1, "y": 2}},
			over: map[string]any{"a": map[string]any{"y": 3, "z": 4}},
			want: map[string]any{"a": map[string]any{"x": 1, "y": 3, "z": 4}},
		},
		"scalar over map replaces": {
			base: map[string]any{"a": map[string]any{"x": 1}},
			over: map[string]any{"a": "flat"},
			want: map[string]any{"a": "flat"},
		},
		"map over scalar replaces": {
			base: map[string]any{"a": "flat"},
			over: map[string]any{"a": map[string]any{"x": 1}},
			want: map[string]any{"a": map[string]any{"x": 1}},
		},
		"nil is kept so Helm drops the default": {
			base: map[string]any{"a": map[string]any{"x": 1}},
			over: map[string]any{"a": map[string]any{"x": nil}},
			want: map[string]any{"a": map[string]any{"x": nil}},
		},
		"lists replace": {
			base: map[string]any{"a": []any{1, 2}},
			over: map[string]any{"a": []any{3}},
			want: map[string]any{"a": []any{3}},
		},
		"nil over": {
			base: map[string]any{"a": 1},
			over: nil,
			want: map[string]any{"a": 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := cmp.Diff(nil, tc.base)
			if diff := cmp.Diff(tc.want, MergeValues(tc.base, tc.over)); diff != "" {
				t.Errorf("MergeValues (-want +got):\n%s", diff)
			}
			if after := cmp.Diff(nil, tc.base); after != before {
				t.Error("MergeValues modified base")
			}
		})
	}
}
