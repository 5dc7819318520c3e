package syncer

import (
	"encoding/json"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

// applyPatch applies podPatch(orig, pod) to raw, the request's JSON.
func applyPatch(t *testing.T, raw []byte, orig, pod *corev1.Pod) ([]byte, []string) {
	t.Helper()
	ops, err := podPatch(orig, pod)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, op := range ops {
		paths = append(paths, op.Operation+" "+op.Path)
	}
	slices.Sort(paths)
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying %s: %v", b, err)
	}
	return out, paths
}

// TestPodPatchKeepsUnknownFields: the patch turns the request's JSON into the
// mutated pod, touches only the fields the mutations changed, and keeps fields
// our types do not know (a newer API server's).
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
	obj["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)["fieldFromTheFuture"] = true
	raw, _ = json.Marshal(obj)

	in := input(p.DeepCopy())
	createChain(in.Role).Run(in)
	out, paths := applyPatch(t, raw, p, in.Pod)
	want := []string{
		"add /metadata/annotations", "add /metadata/labels", "add /spec/nodeSelector",
		"add /spec/schedulerName", "add /spec/tolerations",
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	spec := got["spec"].(map[string]any)
	if spec["fieldFromTheFuture"] != true || spec["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)["fieldFromTheFuture"] != true {
		t.Errorf("the patch dropped a field gpuvc's types do not know: %s", out)
	}
	var patched corev1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&patched, in.Pod) {
		t.Errorf("patched pod differs from the mutated one:\n%s", cmp.Diff(in.Pod, &patched))
	}
}

// TestPodPatchOwnedFieldsOnly: changes of every owned field, set and emptied,
// reach the pod through the patch; a change elsewhere does not.
func TestPodPatchOwnedFieldsOnly(t *testing.T) {
	orig := pod().GPUs("1").Label("app", "x").Annotation("a", "b").TolerateTaint(contract.LabelPool, "a100").Obj()
	orig.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", EnvFrom: []corev1.EnvFromSource{{Prefix: "P_"}}}}
	orig.Spec.PriorityClassName = "low"
	raw, err := json.Marshal(orig)
	if err != nil {
		t.Fatal(err)
	}
	mutated := orig.DeepCopy()
	mutated.Labels["gpuvc.dev/team"] = "fraud"
	mutated.Annotations = nil
	mutated.Spec.Tolerations = nil
	mutated.Spec.NodeSelector = map[string]string{contract.LabelPool: "a100"}
	mutated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: contract.GateGPUShare}}
	mutated.Spec.SchedulerName = "kai"
	mutated.Spec.PriorityClassName = ""
	mutated.Spec.Priority = ptr.To[int32](7)
	mutated.Spec.RuntimeClassName = ptr.To("nvidia")
	mutated.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: mustQty("10m")}
	mutated.Spec.Containers[0].Resources.Limits[contract.ResourceGPU] = mustQty("2")
	mutated.Spec.InitContainers[0].EnvFrom = nil
	withOthers := mutated.DeepCopy()
	withOthers.Spec.Containers[0].Image = "evil"
	withOthers.Spec.HostNetwork = true
	withOthers.Name = "renamed"

	out, paths := applyPatch(t, raw, orig, withOthers)
	want := []string{
		"add /metadata/labels", "add /spec/containers/0/resources", "add /spec/nodeSelector", "add /spec/priority",
		"add /spec/runtimeClassName", "add /spec/schedulerName", "add /spec/schedulingGates", "add /spec/overhead",
		"remove /metadata/annotations", "remove /spec/initContainers/0/envFrom", "remove /spec/priorityClassName", "remove /spec/tolerations",
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}
	var patched corev1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&patched, mutated) {
		t.Errorf("patched pod differs from the mutated one (only owned fields may change):\n%s", cmp.Diff(mutated, &patched))
	}
	if ops, err := podPatch(orig, orig.DeepCopy()); err != nil || len(ops) != 0 {
		t.Errorf("an unchanged pod: ops %v, err %v", ops, err)
	}
}
