package share

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// uidPatch is a JSON merge patch from orig to modified that also carries
// orig's UID. The API server refuses to change a UID, so the patch applies only
// to the very pod the controller read, never to a new one of the same name; and
// unlike a resourceVersion precondition it does not fail because the scheduler
// or kubelet updated the pod's status meanwhile (which they do to every new
// pod).
func uidPatch(orig, modified client.Object) (client.Patch, error) {
	data, err := client.MergeFrom(orig).Data(modified)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	if orig.GetUID() == "" {
		return nil, fmt.Errorf("%s has no UID", orig.GetName())
	}
	meta["uid"] = string(orig.GetUID())
	m["metadata"] = meta
	data, err = json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return client.RawPatch(types.MergePatchType, data), nil
}
