package syncer

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOwned(t *testing.T) {
	cases := map[string]bool{
		"/metadata/labels/gpuvc.dev~1team":         true,
		"/metadata/annotations":                    true,
		"/spec/tolerations/0":                      true,
		"/spec/priority":                           true,
		"/spec/priorityClassName":                  true,
		"/spec/containers/1/envFrom/0":             true,
		"/spec/containers/0/resources/limits/cpu":  true,
		"/spec/initContainers/0/envFrom":           true,
		"/spec/containers/0/image":                 false,
		"/spec/containers/0":                       false,
		"/spec/hostNetwork":                        false,
		"/metadata/name":                           false,
		"/spec/someFieldFromANewerAPIServer":       false,
		"/spec/containers/0/someFieldFromTheFutur": false,
	}
	for path, want := range cases {
		if got := owned(path); got != want {
			t.Errorf("owned(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestPodPatchKeepsUnknownFields: re-encoding a pod drops fields our types do not
// know; the patch must not remove them.
func TestPodPatchKeepsUnknownFields(t *testing.T) {
	p := pod().GPUs("1").Obj()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	obj["spec"].(map[string]any)["fieldFromTheFuture"] = true
	raw, _ = json.Marshal(obj)

	in := input(p)
	createChain(in.Role).Run(in)
	ops, err := podPatch(raw, in.Pod)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, op := range ops {
		paths = append(paths, op.Operation+" "+op.Path)
	}
	slices.Sort(paths)
	// No "remove /spec/fieldFromTheFuture".
	want := []string{
		"add /metadata/annotations", "add /metadata/labels", "add /spec/nodeSelector",
		"add /spec/schedulerName", "add /spec/tolerations",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
}
