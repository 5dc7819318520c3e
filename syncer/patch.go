package syncer

import (
	"encoding/json"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
)

// ownedPaths are the pod fields the mutations write. A patch computed by
// re-encoding the pod may also touch fields our Go types do not know (a newer API
// server's) or encode differently; those operations are dropped so the webhook
// never changes what it does not own. A mutation outside this list would be lost,
// and the validating webhook would then refuse the pod: the failure is closed.
var ownedPaths = [][]string{
	{"metadata", "labels"},
	{"metadata", "annotations"},
	{"spec", "nodeSelector"},
	{"spec", "tolerations"},
	{"spec", "schedulingGates"},
	{"spec", "schedulerName"},
	{"spec", "priorityClassName"},
	{"spec", "priority"},
	{"spec", "preemptionPolicy"},
	{"spec", "runtimeClassName"},
	{"spec", "overhead"},
	{"spec", "containers", "*", "resources"},
	{"spec", "containers", "*", "envFrom"},
	{"spec", "initContainers", "*", "resources"},
	{"spec", "initContainers", "*", "envFrom"},
}

func owned(path string) bool {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for _, p := range ownedPaths {
		if len(segs) < len(p) {
			continue
		}
		match := true
		for i, s := range p {
			if s != "*" && s != segs[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// podPatch returns JSON patch operations turning raw (the request's object) into
// pod, restricted to owned fields.
func podPatch(raw []byte, pod *corev1.Pod) ([]jsonpatch.Operation, error) {
	cur, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatch.CreatePatch(raw, cur)
	if err != nil {
		return nil, err
	}
	kept := ops[:0]
	for _, op := range ops {
		if owned(op.Path) {
			kept = append(kept, op)
		}
	}
	return kept, nil
}
