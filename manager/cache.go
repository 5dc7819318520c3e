package manager

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/syncer/queued"
)

// What the manager's informers hold. The cache is the manager's memory at
// scale: a host with 100 teams and 10,000 pods held every pod whole (27.8 KiB
// each, managed fields and all). It now holds only what gpuvc reads from it:
//
//   - every object without its managed fields (nothing gpuvc runs reads them
//     from the cache; server-side apply does not need them);
//   - pods of team namespaces only (the webhook labels every one of them
//     gpuvc.dev/team), metadata only (no reader asks for a typed pod: a
//     typed pod is a 1.5 KiB struct however little it holds), without
//     annotations (trimPod);
//   - Kueue Workloads trimmed to what their readers use (trimWorkload);
//   - nodes without their image lists;
//   - only the manager's own Secrets.
//
// Kueue's objects, unstructured, are read from the cache like the rest (New sets
// the client's CacheOptions.Unstructured).
//
// Readers of the cached objects, all through mgr.GetClient() or mgr.GetCache()
// (everything else reads the API server: mgr.GetAPIReader()):
//
//   - pods (metadata): syncer/queued's NotQueued (labels, deletionTimestamp,
//     UID, creationTimestamp; it reads the scheduling gates of a pod it is
//     about to tell from the API server) and Controller (the Workload's pod:
//     deletionTimestamp; an event on it); syncer/share's pod handler (labels,
//     UID: it only wakes the team, and reads pods from the API server);
//   - Workloads: manager/team's queue status (teamqueue.Status: pod sets'
//     counts and container resources, conditions), syncer/queued (conditions,
//     owner references, spec.queueName, the admission's resource usage; its
//     identity for the event's reference);
//   - nodes: labels (policies, pools, accounting), spec.unschedulable and
//     status allocatable and conditions (pool metrics);
//   - NetworkPolicies, whole: manager/team's own (drift) and vCluster's copies
//     of the teams' (labels, pod selector, policy types, egress rules: the
//     same-namespace allowance).
//
// TestCacheKeepsWhatReadersRead pins the fields kept and that the readers
// decide the same on trimmed objects.
func cacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{team.LabelManagedBy: "gpuvc"})
	return cache.Options{
		DefaultTransform: transformDefault,
		ByObject: map[client.Object]cache.ByObject{
			// Caching every Secret of the host would cost memory and read access
			// the manager does not need.
			&corev1.Secret{}: {Label: managed},
			&corev1.Pod{}:    {Label: teamPods(), Transform: trimPod},
			&corev1.Node{}:   {Transform: trimNode},
		},
	}
}

// teamPods selects the pods of team namespaces: the webhook sets gpuvc.dev/team
// on every pod it admits there, reservation and control-plane pods included.
func teamPods() labels.Selector {
	r, err := labels.NewRequirement(contract.LabelTeam, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid key
	}
	return labels.NewSelector().Add(*r)
}

var _ toolscache.TransformFunc = transformDefault

// transformDefault drops managed fields from every cached object, and trims
// Kueue's Workloads (unstructured: gpuvc does not link Kueue's API).
func transformDefault(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind().GroupKind() == queued.WorkloadKind.GroupKind() {
		return trimWorkload(u), nil
	}
	return stripManagedFields(obj), nil
}

func stripManagedFields(obj any) any {
	if o, ok := obj.(metav1.Object); ok && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	return obj
}

// trimPod keeps of a metadata-only pod its metadata but for managed fields
// and annotations. A typed pod (no reader asks for one now) keeps its
// identity, labels, owners, deletion, node, scheduling gates and phase.
func trimPod(obj any) (any, error) {
	switch p := obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{
			TypeMeta: p.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
				Generation: p.Generation, CreationTimestamp: p.CreationTimestamp,
				DeletionTimestamp: p.DeletionTimestamp, DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds,
				Labels: p.Labels, OwnerReferences: p.OwnerReferences, Finalizers: p.Finalizers,
			},
			Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName, SchedulingGates: p.Spec.SchedulingGates},
			Status: corev1.PodStatus{Phase: p.Status.Phase},
		}, nil
	case *metav1.PartialObjectMetadata:
		p.ManagedFields, p.Annotations = nil, nil
		return p, nil
	}
	return stripManagedFields(obj), nil
}

// trimNode drops a node's managed fields and its list of images (tens of KiB on
// a node that has pulled many): no reader looks at them.
func trimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
	}
	return stripManagedFields(obj), nil
}

// trimWorkload keeps of a Kueue Workload what its readers read: its identity
// (name, namespace, UID, resourceVersion, deletion) and owners (the pod it
// stands for); its queue; per pod set the count and the containers' resources
// (not the rest of the pod template: Kueue's pod integration copies the whole
// pod spec there); from its status the conditions (type, status, reason,
// message) and per pod set the resources the admission holds. Every map kept
// is a new one: a map the JSON decoder made keeps its size however many keys
// are deleted from it. At 10,000 pods a Workload still cost ~7 KB with its
// metadata, labels and pod-set names kept whole.
func trimWorkload(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := map[string]any{}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := u.Object[k]; ok {
			out[k] = v
		}
	}
	if meta, ok := u.Object["metadata"].(map[string]any); ok {
		m := pick(meta, "name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
		if owners, ok := meta["ownerReferences"].([]any); ok {
			kept := make([]any, 0, len(owners))
			for _, o := range owners {
				if om, ok := o.(map[string]any); ok {
					kept = append(kept, pick(om, "apiVersion", "kind", "name", "uid", "controller"))
				}
			}
			m["ownerReferences"] = kept
		}
		out["metadata"] = m
	}
	if spec, ok := u.Object["spec"].(map[string]any); ok {
		s := pick(spec, "queueName")
		if sets, ok := spec["podSets"].([]any); ok {
			kept := make([]any, 0, len(sets))
			for _, ps := range sets {
				psm, _ := ps.(map[string]any)
				if psm == nil {
					continue
				}
				set := pick(psm, "count")
				if tmpl, ok := psm["template"].(map[string]any); ok {
					if ts, ok := tmpl["spec"].(map[string]any); ok {
						podSpec := map[string]any{}
						for _, field := range []string{"containers", "initContainers"} {
							if cs := containerResources(ts[field]); cs != nil {
								podSpec[field] = cs
							}
						}
						set["template"] = map[string]any{"spec": podSpec}
					}
				}
				kept = append(kept, set)
			}
			s["podSets"] = kept
		}
		out["spec"] = s
	}
	if status, ok := u.Object["status"].(map[string]any); ok {
		s := map[string]any{}
		if conds, ok := status["conditions"].([]any); ok {
			kept := make([]any, 0, len(conds))
			for _, c := range conds {
				if cm, ok := c.(map[string]any); ok {
					kept = append(kept, pick(cm, "type", "status", "reason", "message"))
				}
			}
			s["conditions"] = kept
		}
		if adm, ok := status["admission"].(map[string]any); ok {
			a := map[string]any{}
			if sets, ok := adm["podSetAssignments"].([]any); ok {
				kept := make([]any, 0, len(sets))
				for _, ps := range sets {
					if psm, ok := ps.(map[string]any); ok {
						kept = append(kept, pick(psm, "resourceUsage"))
					}
				}
				a["podSetAssignments"] = kept
			}
			s["admission"] = a
		}
		out["status"] = s
	}
	u.Object = out
	return u
}

// containerResources keeps each container's resources.
func containerResources(v any) []any {
	cs, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		if cm, ok := c.(map[string]any); ok {
			out = append(out, pick(cm, "resources"))
		}
	}
	return out
}

// pick copies the named keys of m that are present.
func pick(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}
