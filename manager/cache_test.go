package manager

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
	"github.com/gpuvc/gpuvc/syncer/queued"
)

var created = metav1.NewTime(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))

// queuedPod is a team pod as the API server stores it: admitted by the webhook
// (gpuvc labels and annotations, pool pinning), sent to Kueue (queue label and
// gate), with managed fields and a status.
func queuedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "trainer-0", Namespace: "team-vision", UID: "pod-uid", ResourceVersion: "811", CreationTimestamp: created,
			Labels: map[string]string{"app": "trainer", contract.LabelTeam: "vision", contract.LabelKueueQueueName: contract.KueueLocalQueueName},
			Annotations: map[string]string{contract.AnnotationRole: contract.RoleWorkload,
				contract.AnnotationDecisions: `[{"type":"Normal","reason":"PoolPinned","message":"pinned to node pool a100"}]`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "trainer-7d9", UID: "rs-uid", Controller: ptr.To(true)}},
			Finalizers:      []string{"kueue.x-k8s.io/managed"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "vcluster", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/trainer", Command: []string{"python", "train.py"},
				Env:       []corev1.EnvVar{{Name: "BATCH", Value: "64"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{contract.ResourceGPU: resource.MustParse("2")}}}},
			NodeSelector:    map[string]string{contract.LabelPool: "a100"},
			Tolerations:     []corev1.Toleration{{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "a100", Effect: corev1.TaintEffectNoSchedule}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: contract.KueueAdmissionGate}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}},
	}
}

// kueueWorkload is the Workload Kueue's pod integration makes for queuedPod:
// the whole pod template in its pod set, waiting for quota.
func kueueWorkload(t *testing.T, name string, quotaReserved bool, gpus string) *unstructured.Unstructured {
	reserved, msg := "False", "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor gpuvc-a100-gpu, 2 more needed"
	if quotaReserved {
		reserved, msg = "True", "Quota reserved in ClusterQueue gpuvc-vision"
	}
	raw := `{
	  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
	  "metadata": {"name": "pod-` + name + `", "namespace": "team-vision", "uid": "wl-` + name + `", "resourceVersion": "812",
	    "labels": {"kueue.x-k8s.io/job-uid": "pod-uid"}, "annotations": {"kueue.x-k8s.io/is-group-workload": "false"},
	    "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "` + name + `", "uid": "pod-uid", "controller": true, "blockOwnerDeletion": true}],
	    "finalizers": ["kueue.x-k8s.io/resource-in-use"],
	    "managedFields": [{"manager": "kueue", "operation": "Apply", "apiVersion": "kueue.x-k8s.io/v1beta2", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
	  "spec": {"queueName": "gpuvc", "priority": 0, "active": true, "podSets": [{"name": "main", "count": 1, "template": {
	    "metadata": {"labels": {"app": "trainer"}},
	    "spec": {"containers": [{"name": "main", "image": "registry.invalid/trainer", "command": ["python", "train.py"], "env": [{"name": "BATCH", "value": "64"}],
	               "resources": {"limits": {"nvidia.com/gpu": "` + gpus + `"}, "requests": {"nvidia.com/gpu": "` + gpus + `", "cpu": "1"}}}],
	             "initContainers": [{"name": "fetch", "image": "registry.invalid/fetch", "resources": {"requests": {"cpu": "2"}}}],
	             "nodeSelector": {"gpuvc.dev/pool": "a100"},
	             "tolerations": [{"key": "gpuvc.dev/pool", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}],
	             "volumes": [{"name": "data", "emptyDir": {}}]}}}]},
	  "status": {"conditions": [{"type": "QuotaReserved", "status": "` + reserved + `", "reason": "Pending", "message": "` + msg + `",
	               "lastTransitionTime": "2026-11-28T10:00:00Z", "observedGeneration": 1}],
	             "admission": {"clusterQueue": "gpuvc-vision", "podSetAssignments": [{"name": "main", "count": 1,
	               "flavors": {"nvidia.com/gpu": "gpuvc-a100-gpu"}, "resourceUsage": {"nvidia.com/gpu": "` + gpus + `", "cpu": "1"}}]},
	             "resourceRequests": [{"name": "main", "resources": {"nvidia.com/gpu": "` + gpus + `", "cpu": "1"}}]}
	}`
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(raw)); err != nil { // as the API server's objects decode: integers are int64
		t.Fatal(err)
	}
	return u
}

// TestCachePodFields pins what a cached pod keeps: identity, labels, owners,
// deletion, node, scheduling gates and phase; nothing else.
func TestCachePodFields(t *testing.T) {
	p := queuedPod()
	got, err := trimPod(p.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "trainer-0", Namespace: "team-vision", UID: "pod-uid", ResourceVersion: "811", CreationTimestamp: created,
			Labels: p.Labels, OwnerReferences: p.OwnerReferences, Finalizers: p.Finalizers,
		},
		Spec:   corev1.PodSpec{SchedulingGates: p.Spec.SchedulingGates},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cached pod (-want +got)\n%s", diff)
	}
	again, _ := trimPod(got)
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("trimming twice changes the pod (-once +twice)\n%s", diff)
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: *p.ObjectMeta.DeepCopy()}
	gotMeta, _ := trimPod(meta)
	if m := gotMeta.(*metav1.PartialObjectMetadata); m.ManagedFields != nil || m.Annotations != nil || m.Labels[contract.LabelTeam] != "vision" {
		t.Errorf("metadata-only pod: managed fields %v, annotations %v, labels %v", m.ManagedFields, m.Annotations, m.Labels)
	}
}

// TestCacheSelectsTeamPods: only pods the webhook labelled for a team are
// cached.
func TestCacheSelectsTeamPods(t *testing.T) {
	sel := teamPods()
	for name, tc := range map[string]struct {
		labels map[string]string
		want   bool
	}{
		"team pod":                {map[string]string{contract.LabelTeam: "vision"}, true},
		"reservation pod":         {map[string]string{contract.LabelTeam: "vision", contract.LabelRole: contract.RoleReservation}, true},
		"pod of another workload": {map[string]string{"app": "dns"}, false},
		"unlabelled":              {nil, false},
	} {
		if got := sel.Matches(labels.Set(tc.labels)); got != tc.want {
			t.Errorf("%s: selected %v, want %v", name, got, tc.want)
		}
	}
}

// TestCacheWorkloadFields pins what a cached Workload keeps.
func TestCacheWorkloadFields(t *testing.T) {
	got, err := transformDefault(kueueWorkload(t, "trainer-0", false, "2"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
		"metadata": map[string]any{"name": "pod-trainer-0", "namespace": "team-vision", "uid": "wl-trainer-0", "resourceVersion": "812",
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "trainer-0", "uid": "pod-uid", "controller": true}}},
		"spec": map[string]any{"queueName": "gpuvc", "podSets": []any{map[string]any{"count": int64(1),
			"template": map[string]any{"spec": map[string]any{
				"containers":     []any{map[string]any{"resources": map[string]any{"limits": map[string]any{"nvidia.com/gpu": "2"}, "requests": map[string]any{"nvidia.com/gpu": "2", "cpu": "1"}}}},
				"initContainers": []any{map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}},
			}}}}},
		"status": map[string]any{
			"conditions": []any{map[string]any{"type": "QuotaReserved", "status": "False", "reason": "Pending",
				"message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor gpuvc-a100-gpu, 2 more needed"}},
			"admission": map[string]any{"podSetAssignments": []any{map[string]any{"resourceUsage": map[string]any{"nvidia.com/gpu": "2", "cpu": "1"}}}},
		},
	}
	if diff := cmp.Diff(want, got.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("cached Workload (-want +got)\n%s", diff)
	}
	again, _ := transformDefault(got)
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("trimming twice changes the Workload (-once +twice)\n%s", diff)
	}
}

// TestCacheStripsManagedFieldsAndImages: every other object loses only its
// managed fields; nodes their image lists too.
func TestCacheStripsManagedFieldsAndImages(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "gpuvc-manager", Operation: metav1.ManagedFieldsOperationApply}}
	team := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "vision", ManagedFields: managed}, Spec: gpuvcv1.TeamSpec{Pool: "a100"}}
	got, _ := transformDefault(team.DeepCopy())
	want := team.DeepCopy()
	want.ManagedFields = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cached Team (-want +got)\n%s", diff)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "a100-0", Labels: map[string]string{contract.LabelPool: "a100"}, Annotations: map[string]string{"a": "b"}, ManagedFields: managed},
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{contract.ResourceGPU: resource.MustParse("8")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Images:      []corev1.ContainerImage{{Names: []string{"registry.invalid/trainer@sha256:0"}, SizeBytes: 1 << 30}},
		},
	}
	gotNode, _ := trimNode(node.DeepCopy())
	wantNode := node.DeepCopy()
	wantNode.ManagedFields, wantNode.Status.Images = nil, nil
	if diff := cmp.Diff(wantNode, gotNode); diff != "" {
		t.Errorf("cached node (-want +got)\n%s", diff)
	}
}

// TestCacheReadersDecideAlike runs the readers of cached pods and Workloads on
// whole and on trimmed objects: they must decide and say the same.
func TestCacheReadersDecideAlike(t *testing.T) {
	// manager/team's queue status (teamqueue.Status) from the team's Workloads.
	team := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "vision"}, Spec: gpuvcv1.TeamSpec{Pool: "a100",
		Quota: gpuvcv1.Quota{GPUs: ptr.To[int32](4)}, Queueing: &gpuvcv1.Queueing{}}}
	cq := clusterQueue()
	whole := []*unstructured.Unstructured{kueueWorkload(t, "trainer-0", false, "2"), kueueWorkload(t, "trainer-1", true, "3")}
	var trimmed []*unstructured.Unstructured
	for _, w := range whole {
		tw, _ := transformDefault(w.DeepCopy())
		trimmed = append(trimmed, tw.(*unstructured.Unstructured))
	}
	wantStatus := teamqueue.Status(team, teamqueue.Standing{ClusterQueue: cq, Cohort: []*unstructured.Unstructured{cq}, Workloads: whole})
	gotStatus := teamqueue.Status(team, teamqueue.Standing{ClusterQueue: cq, Cohort: []*unstructured.Unstructured{cq}, Workloads: trimmed})
	if diff := cmp.Diff(wantStatus, gotStatus); diff != "" {
		t.Errorf("queue status from trimmed Workloads (-whole +trimmed)\n%s", diff)
	}
	if wantStatus.Flavors[0].Queued != 2 {
		t.Errorf("queue status counts %d GPUs waiting, want 2 (the fixture must exercise the pod sets)", wantStatus.Flavors[0].Queued)
	}

	// syncer/queued: the Queued event (Workload, its pod, the team's standing) and
	// the NotQueued event (a gated pod without a Workload).
	// cached is what the cache holds of the pod (whole, or its trimmed
	// metadata); the API server always has it whole.
	say := func(cached *corev1.Pod, wls []*unstructured.Unstructured) []string {
		build := func(pod *corev1.Pod) client.Client {
			objs := []client.Object{pod, cq, localQueue(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-vision", Labels: map[string]string{contract.LabelTeam: "vision"}}}}
			for _, w := range wls {
				objs = append(objs, w.DeepCopy())
			}
			return fake.NewClientBuilder().WithScheme(kueueScheme()).WithObjects(objs...).Build()
		}
		c, api := build(cached), build(queuedPod())
		rec := events.NewFakeRecorder(10)
		ctx := context.Background()
		if _, err := queued.New(c, rec).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-vision", Name: "pod-trainer-0"}}); err != nil {
			t.Fatal(err)
		}
		clock := clocktesting.NewFakePassiveClock(created.Add(time.Hour))
		key := client.ObjectKeyFromObject(cached)
		if _, err := queued.NewNotQueued(c, rec, queued.WithClock(clock), queued.WithReader(api)).Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		var said []string
		for len(rec.Events) > 0 {
			said = append(said, <-rec.Events)
		}
		return said
	}
	// The manager caches pods' metadata only, trimmed: no spec, no status.
	meta, _ := trimPod(&metav1.PartialObjectMetadata{ObjectMeta: queuedPod().ObjectMeta})
	want := say(queuedPod(), whole)
	got := say(&corev1.Pod{ObjectMeta: meta.(*metav1.PartialObjectMetadata).ObjectMeta}, trimmed)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events from trimmed objects (-whole +trimmed)\n%s", diff)
	}
	t.Logf("events: %q", want)
	if len(want) != 2 {
		t.Errorf("events %q: want a Queued and a NotQueued event (the fixture must exercise both readers)", want)
	}
}

func clusterQueue() *unstructured.Unstructured {
	cq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": "gpuvc-vision"},
		"spec": map[string]any{"cohortName": "gpuvc-a100", "resourceGroups": []any{map[string]any{"flavors": []any{
			map[string]any{"name": "gpuvc-a100-gpu", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "0"}}},
		}}}},
		"status": map[string]any{"pendingWorkloads": int64(1), "admittedWorkloads": int64(1), "flavorsReservation": []any{
			map[string]any{"name": "gpuvc-a100-gpu", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "total": "3", "borrowed": "0"}}},
		}},
	}}
	return cq
}

func localQueue() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": "gpuvc", "namespace": "team-vision"},
		"spec":     map[string]any{"clusterQueue": "gpuvc-vision"},
	}}
}

// kueueScheme is gpuvc's scheme with Kueue's kinds as unstructured objects.
func kueueScheme() *runtime.Scheme {
	s := scheme.New()
	for _, kind := range []string{"Workload", "LocalQueue", "ClusterQueue"} {
		gvk := queued.WorkloadKind.GroupVersion().WithKind(kind)
		s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(kind+"List"), &unstructured.UnstructuredList{})
	}
	return s
}
