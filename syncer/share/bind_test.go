package share

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

func TestPinToNode(t *testing.T) {
	byName := func(n string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want []corev1.NodeSelectorTerm
	}{
		"no affinity": {
			pod:  testobj.Pod("p", "ns").Obj(),
			want: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{byName("a100-0")}}},
		},
		// Terms are ORed: the node is added to each, never as a new term.
		"tenant terms are narrowed": {
			pod: testobj.Pod("p", "ns").RequireNodeLabel("zone", corev1.NodeSelectorOpIn, "z1").RequireNodeLabel("zone", corev1.NodeSelectorOpIn, "z2").Obj(),
			want: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}, MatchFields: []corev1.NodeSelectorRequirement{byName("a100-0")}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}, MatchFields: []corev1.NodeSelectorRequirement{byName("a100-0")}},
			},
		},
		"idempotent": {
			pod:  testobj.Pod("p", "ns").RequireNodeNames("a100-0").Obj(),
			want: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{byName("a100-0")}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pinToNode(tc.pod, "a100-0")
			got := tc.pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("terms (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShareEnv(t *testing.T) {
	r := &reservation{name: "gpuvc-gpu-x", uuid: "GPU-1", memMiB: 81920}
	frac := sharePodObj("f", 0, "0.3", "", 0, true)
	mem := sharePodObj("m", 0, "20480M", "", 0, true)
	cases := map[string]struct {
		sp   *sharePod
		want map[string]string
	}{
		"fraction": {
			sp:   &sharePod{pod: &frac, req: gpushare.Fraction(0.3), units: 3000, res: r},
			want: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-1", "GPU_PORTION": "0.3", "GPUVC_GPU_MEMORY_MIB": "24576", "GPUVC_RESERVATION": "gpuvc-gpu-x"},
		},
		"memory": {
			sp:   &sharePod{pod: &mem, req: gpushare.Memory(20480), units: 2500, res: r},
			want: map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-1", "GPU_PORTION": "0.25", "GPUVC_GPU_MEMORY_MIB": "20480", "GPUVC_RESERVATION": "gpuvc-gpu-x"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, shareEnv(tc.sp, nil)); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestForeignConfigMap(t *testing.T) {
	cm := func(labels, annotations map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
	}
	cases := map[string]struct {
		cm      *corev1.ConfigMap
		foreign bool
	}{
		"gpuvc's":            {cm(map[string]string{contract.LabelSharePod: "p"}, nil), false},
		"another pod's":      {cm(map[string]string{contract.LabelSharePod: "q"}, nil), true},
		"unlabelled":         {cm(nil, nil), true},
		"synced by vCluster": {cm(map[string]string{contract.LabelSharePod: "p"}, map[string]string{"vcluster.loft.sh/object-name": "x"}), true},
		"vCluster-labelled":  {cm(map[string]string{contract.LabelSharePod: "p", "vcluster.loft.sh/managed-by": "a"}, nil), true},
	}
	for name, tc := range cases {
		if got := foreign(tc.cm, "p") != ""; got != tc.foreign {
			t.Errorf("%s: foreign = %v, want %v", name, got, tc.foreign)
		}
	}
}

func TestQuotaError(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	quota := apierrors.NewForbidden(gr, "gpuvc-gpu-x", errors.New("exceeded quota: gpuvc-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"))
	q, ok := asQuotaError(fmt.Errorf("creating: %w", quota))
	if !ok || q.detail != "exceeded quota: gpuvc-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1" {
		t.Errorf("asQuotaError = %v, %v", q, ok)
	}
	full := apierrors.NewForbidden(gr, "gpuvc-gpu-x", errors.New(`admission webhook "pods.validate.gpuvc.dev" denied the request: gpuvc: QueueFull: team t's pods ... (limit: 4 = 2 ... + 2 ...)`))
	if q, ok := asQuotaError(full); !ok || !strings.HasPrefix(q.detail, "QueueFull: team t's pods") {
		t.Errorf("asQuotaError(queue full) = %v, %v", q, ok)
	}
	for _, err := range []error{
		apierrors.NewForbidden(gr, "x", errors.New("admission webhook denied the request")),
		apierrors.NewInternalError(errors.New("exceeded quota")),
	} {
		if _, ok := asQuotaError(err); ok {
			t.Errorf("%v taken for a quota refusal", err)
		}
	}
}

func TestReservationPod(t *testing.T) {
	c, err := New(Options{Client: fake.NewClientBuilder().Build(), APIReader: fake.NewClientBuilder().Build(), Image: "gpuvc:test"})
	if err != nil {
		t.Fatal(err)
	}
	p := c.reservationPod("team-a", "gpuvc-gpu-x", Team{Name: "a", Pool: "a100"})
	if !holdsOneGPU(p) {
		t.Errorf("limits %v, want %s: 1", p.Spec.Containers[0].Resources.Limits, contract.ResourceGPU)
	}
	if diff := cmp.Diff(p.Spec.Containers[0].Resources.Limits, p.Spec.Containers[0].Resources.Requests); diff != "" {
		t.Errorf("requests differ from limits: %s", diff)
	}
	wantLabels := map[string]string{contract.LabelRole: contract.RoleReservation, contract.LabelShareGroup: "gpuvc-gpu-x", contract.LabelTeam: "a"}
	if diff := cmp.Diff(wantLabels, p.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if p.Spec.NodeSelector[contract.LabelPool] != "a100" || len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0].Value != "a100" {
		t.Errorf("not pinned to pool a100: %v %v", p.Spec.NodeSelector, p.Spec.Tolerations)
	}
	if diff := cmp.Diff(DefaultCommand, p.Spec.Containers[0].Command); diff != "" {
		t.Errorf("command: %s", diff)
	}
	if _, err := New(Options{Client: fake.NewClientBuilder().Build(), APIReader: fake.NewClientBuilder().Build()}); !errors.Is(err, errNoImage) {
		t.Errorf("no image: %v", err)
	}
}

func TestNamespaceTeams(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		testobj.TeamNamespace("a", "a100"),
		testobj.TeamNamespace("b", "h100"),
		testobj.Namespace("plain", nil),
		testobj.Namespace("team-nopool", map[string]string{contract.LabelTeam: "nopool"}),
	).Build()
	src := NamespaceTeams{Reader: c, MaxPodsPerGPU: map[string]int{"a": 2}}
	ctx := context.Background()
	got, err := src.ShareTeam(ctx, "team-a")
	if err != nil || got != (Team{Name: "a", Pool: "a100", MaxPodsPerGPU: 2}) {
		t.Errorf("team-a: %+v, %v", got, err)
	}
	if got, err := src.ShareTeam(ctx, "team-b"); err != nil || got.maxPods() != DefaultMaxPodsPerGPU || got.Pool != "h100" {
		t.Errorf("team-b: %+v (max %d), %v", got, got.maxPods(), err)
	}
	for _, ns := range []string{"plain", "missing"} {
		if _, err := src.ShareTeam(ctx, ns); !errors.Is(err, ErrNotTeamNamespace) {
			t.Errorf("%s: %v, want ErrNotTeamNamespace", ns, err)
		}
	}
	if _, err := src.ShareTeam(ctx, "team-nopool"); err == nil || errors.Is(err, ErrNotTeamNamespace) {
		t.Errorf("namespace without pool: %v, want an error", err)
	}
}

func TestEventMemo(t *testing.T) {
	var m eventMemo
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: "u"}}
	steps := []struct {
		reason, msg string
		want        bool
	}{{"A", "x", true}, {"A", "x", false}, {"A", "y", true}, {"B", "y", true}, {"A", "x", true}}
	for i, s := range steps {
		if got := m.changed(p, s.reason, s.msg); got != s.want {
			t.Errorf("step %d: changed = %v, want %v", i, got, s.want)
		}
	}
	m.keep("ns", nil)
	if !m.changed(p, "A", "x") {
		t.Error("a forgotten pod's event is news again")
	}
}
