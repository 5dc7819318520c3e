package suite

import (
	"strings"
	"testing"
)

// The backend choice never lands on kind when the engine would have to pull the
// node image (it cannot on a machine without registry access): it falls back to
// the local backend and says why, unless kind is asked for by name.
func TestChooseBackend(t *testing.T) {
	const node = "gpuvc.local/kind-node:v1.36.3"
	for _, tc := range []struct {
		name              string
		env               string
		docker, has       bool
		want, whyContains string
	}{
		{name: "no engine", want: "local", whyContains: "no Docker engine answers"},
		{name: "engine without the node image", docker: true, want: "local", whyContains: "holds no kind node image " + node},
		{name: "engine with the node image", docker: true, has: true, want: "kind", whyContains: "holds the kind node image " + node},
		{name: "kind by name pulls if it must", env: "kind", docker: true, want: "kind", whyContains: "GPUVC_E2E_BACKEND=kind"},
		{name: "local by name", env: "local", docker: true, has: true, want: "local", whyContains: "GPUVC_E2E_BACKEND=local"},
		{name: "kwok by name", env: "kwok", want: "kwok", whyContains: "GPUVC_E2E_BACKEND=kwok"},
		{name: "unknown value is ignored", env: "kind2", want: "local", whyContains: "no Docker engine answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := ""
			h := host{
				env:          func(k string) string { return map[string]string{"GPUVC_E2E_BACKEND": tc.env}[k] },
				dockerAnswer: func() bool { return tc.docker },
				hasImage:     func(ref string) bool { asked = ref; return tc.has },
				nodeImage:    node,
			}
			got, why := chooseBackend(h)
			if got != tc.want || !strings.Contains(why, tc.whyContains) {
				t.Fatalf("chooseBackend = %q (%s), want %q with %q", got, why, tc.want, tc.whyContains)
			}
			if tc.docker && tc.env == "" && asked != node {
				t.Fatalf("asked the engine for image %q, want %q", asked, node)
			}
		})
	}
}

func TestKindNodeImageDefaultsToKinds(t *testing.T) {
	t.Setenv(kindNodeImageEnv, "")
	if got := kindNodeImage(); !strings.HasPrefix(got, "kindest/node:") {
		t.Fatalf("default node image %q, want kind's kindest/node", got)
	}
	t.Setenv(kindNodeImageEnv, "x/node:1")
	if got := kindNodeImage(); got != "x/node:1" {
		t.Fatalf("node image %q, want the one %s names", got, kindNodeImageEnv)
	}
}
