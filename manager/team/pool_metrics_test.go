package team

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// A pool's GPU devices count Ready, schedulable nodes of the pool only; every
// team is listed with its pool.
func TestPoolCollector(t *testing.T) {
	node := func(name, pool string, ready, cordoned bool, alloc corev1.ResourceList) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if pool != "" {
			n.Labels[contract.LabelPool] = pool
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
		n.Spec.Unschedulable = cordoned
		n.Status.Allocatable = alloc
		return n
	}
	q := resource.MustParse
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = gpuvcv1.AddToScheme(s)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		node("a-0", "a100", true, false, corev1.ResourceList{"nvidia.com/gpu": q("8"), "cpu": q("64")}),
		node("a-1", "a100", true, false, corev1.ResourceList{"nvidia.com/gpu": q("4"), "nvidia.com/mig-1g.10gb": q("7")}),
		node("a-2", "a100", false, false, corev1.ResourceList{"nvidia.com/gpu": q("8")}), // not Ready
		node("a-3", "a100", true, true, corev1.ResourceList{"nvidia.com/gpu": q("8")}),   // cordoned
		node("x-0", "", true, false, corev1.ResourceList{"nvidia.com/gpu": q("8")}),      // in no pool
		testobj.Team("vision", "a100").Obj(),
		testobj.Team("llm", "h100").Obj(),
	).Build()
	want := `
# HELP gpuvc_pool_gpus GPU devices a node pool offers, by resource (nvidia.com/gpu, nvidia.com/mig-<profile>): allocatable on its Ready, schedulable nodes (label gpuvc.dev/pool).
# TYPE gpuvc_pool_gpus gauge
gpuvc_pool_gpus{pool="a100",resource="nvidia.com/gpu"} 12
gpuvc_pool_gpus{pool="a100",resource="nvidia.com/mig-1g.10gb"} 7
# HELP gpuvc_team_info 1 for every team, with the node pool it draws from: join on team to put a team's series in its pool.
# TYPE gpuvc_team_info gauge
gpuvc_team_info{pool="a100",team="vision"} 1
gpuvc_team_info{pool="h100",team="llm"} 1
`
	if err := testutil.CollectAndCompare(NewPoolCollector(c), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
