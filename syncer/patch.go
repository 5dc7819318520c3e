package syncer

import (
	"fmt"
	"reflect"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// ownedField is a pod field the mutations write: its JSON pointer and its value.
type ownedField struct {
	path string
	get  func(*corev1.Pod) any
}

// ownedFields are the pod fields the mutations write. The patch is computed
// from them alone, compared as typed values: a field the webhook did not
// change is never in it, and neither is any field our Go types do not know (a
// newer API server's), which the request's JSON keeps. A mutation outside
// this list would be lost, and the validating webhook would then refuse the
// pod: the failure is closed.
var ownedFields = []ownedField{
	{"/metadata/labels", func(p *corev1.Pod) any { return p.Labels }},
	{"/metadata/annotations", func(p *corev1.Pod) any { return p.Annotations }},
	{"/spec/nodeSelector", func(p *corev1.Pod) any { return p.Spec.NodeSelector }},
	{"/spec/tolerations", func(p *corev1.Pod) any { return p.Spec.Tolerations }},
	{"/spec/schedulingGates", func(p *corev1.Pod) any { return p.Spec.SchedulingGates }},
	{"/spec/schedulerName", func(p *corev1.Pod) any { return p.Spec.SchedulerName }},
	{"/spec/priorityClassName", func(p *corev1.Pod) any { return p.Spec.PriorityClassName }},
	{"/spec/priority", func(p *corev1.Pod) any { return p.Spec.Priority }},
	{"/spec/preemptionPolicy", func(p *corev1.Pod) any { return p.Spec.PreemptionPolicy }},
	{"/spec/runtimeClassName", func(p *corev1.Pod) any { return p.Spec.RuntimeClassName }},
	{"/spec/overhead", func(p *corev1.Pod) any { return p.Spec.Overhead }},
}

// ownedContainerFields are the fields of each container and init container
// the mutations write, below /spec/containers/<i> and /spec/initContainers/<i>.
var ownedContainerFields = []struct {
	name string
	get  func(*corev1.Container) any
}{
	{"resources", func(c *corev1.Container) any { return c.Resources }},
	{"envFrom", func(c *corev1.Container) any { return c.EnvFrom }},
}

// podPatch returns the JSON patch operations that turn orig (the pod as the
// request holds it) into pod, field by owned field: a changed field is set
// whole ("add" replaces an existing member), one emptied is removed.
func podPatch(orig, pod *corev1.Pod) ([]jsonpatch.Operation, error) {
	var ops []jsonpatch.Operation
	diff := func(path string, was, is any) {
		if equality.Semantic.DeepEqual(was, is) {
			return
		}
		switch {
		case !omitted(is):
			ops = append(ops, jsonpatch.NewOperation("add", path, is))
		case !omitted(was):
			ops = append(ops, jsonpatch.NewOperation("remove", path, nil))
		}
	}
	for _, f := range ownedFields {
		diff(f.path, f.get(orig), f.get(pod))
	}
	for _, list := range []struct {
		path    string
		was, is []corev1.Container
	}{
		{"/spec/initContainers", orig.Spec.InitContainers, pod.Spec.InitContainers},
		{"/spec/containers", orig.Spec.Containers, pod.Spec.Containers},
	} {
		if len(list.was) != len(list.is) {
			// The mutations never add or remove containers.
			return nil, fmt.Errorf("%s: %d containers in the request, %d after the mutations", list.path, len(list.was), len(list.is))
		}
		for i := range list.is {
			for _, f := range ownedContainerFields {
				diff(fmt.Sprintf("%s/%d/%s", list.path, i, f.name), f.get(&list.was[i]), f.get(&list.is[i]))
			}
		}
	}
	return ops, nil
}

// omitted reports whether encoding/json leaves the value out of a field tagged
// omitempty: nil, an empty map, slice or string. Structs are never left out.
func omitted(v any) bool {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Map, reflect.Slice, reflect.String:
		return r.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return r.IsNil()
	}
	return false
}
