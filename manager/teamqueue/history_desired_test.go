package teamqueue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// TestDesiredSharedSumsThePoolsGuarantees: a usage-history pool's ClusterQueue
// holds the sum of its queueing teams' guarantees per GPU kind, takes their
// namespaces only, orders by usage and preempts nothing; each team's
// LocalQueue points at it with the team's weight. Teams of other pools, teams
// that do not queue and teams being deleted are left out.
func TestDesiredSharedSumsThePoolsGuarantees(t *testing.T) {
	gone := testobj.Team("gone", "a100").GPUs(8).Queued().Obj()
	gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	members := []gpuvcv1.Team{
		*testobj.Team("vision", "a100").GPUs(2).MIG("1g.10gb", 4).Queued().Obj(),
		*testobj.Team("other", "h100").GPUs(8).Queued().Obj(),
		*testobj.Team("plain", "a100").GPUs(8).Obj(),
		*gone,
	}
	nlp := testobj.Team("nlp", "a100").GPUs(3).MIG("1g.10gb+me", 1).Borrow(4).Weight(2).Obj()
	objs, err := teamqueue.DesiredShared(nlp, members)
	if err != nil {
		t.Fatal(err)
	}
	cq := objs.ClusterQueue
	if cq.GetName() != "gpuvc-pool.a100" || !objs.SharedClusterQueue {
		t.Fatalf("ClusterQueue %q (shared %v), want the pool's gpuvc-pool.a100", cq.GetName(), objs.SharedClusterQueue)
	}
	want := map[string]string{
		"gpuvc-a100-gpu/nvidia.com/gpu":                       "5 0 -",
		"gpuvc-a100-mig-1g.10gb/nvidia.com/mig-1g.10gb":       "4 0 -",
		"gpuvc-a100-mig-1g.10gb-me/nvidia.com/mig-1g.10gb.me": "1 0 -",
	}
	if diff := cmp.Diff(want, quotas(t, cq)); diff != "" {
		t.Errorf("quotas (-want +got):\n%s", diff)
	}
	for path, want := range map[string]string{
		"spec.admissionScope.admissionMode":   teamqueue.AdmissionFairSharingMode,
		"spec.preemption.reclaimWithinCohort": "Never",
		"spec.preemption.withinClusterQueue":  "Never",
		"spec.cohortName":                     "gpuvc-a100",
	} {
		if got, _, _ := unstructured.NestedString(cq.Object, strings.Split(path, ".")...); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	exprs, _, _ := unstructured.NestedSlice(cq.Object, "spec", "namespaceSelector", "matchExpressions")
	if len(exprs) != 1 || !cmp.Equal(exprs[0].(map[string]any)["values"], []any{"team-nlp", "team-vision"}) {
		t.Errorf("namespaceSelector %v, want the namespaces of nlp and vision only", exprs)
	}
	lq := objs.LocalQueue
	cqName, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
	weight, _, _ := unstructured.NestedString(lq.Object, "spec", "fairSharing", "weight")
	if lq.GetNamespace() != "team-nlp" || cqName != "gpuvc-pool.a100" || weight != "2" {
		t.Errorf("LocalQueue in %q on %q with weight %q, want team-nlp, gpuvc-pool.a100, 2", lq.GetNamespace(), cqName, weight)
	}
}

// TestDesiredSharedWithoutTheTeam: a team that stops queueing gets no
// LocalQueue, and the ClusterQueue is the other members'; with none left, nothing.
func TestDesiredSharedWithoutTheTeam(t *testing.T) {
	left := testobj.Team("nlp", "a100").GPUs(3).Obj()
	objs, err := teamqueue.DesiredShared(left, []gpuvcv1.Team{*testobj.Team("vision", "a100").GPUs(2).Queued().Obj(), *left})
	if err != nil {
		t.Fatal(err)
	}
	if objs.LocalQueue != nil {
		t.Errorf("a LocalQueue for a team that does not queue")
	}
	if got := quotas(t, objs.ClusterQueue)["gpuvc-a100-gpu/nvidia.com/gpu"]; got != "2 0 -" {
		t.Errorf("GPU quota %q, want vision's 2 alone", got)
	}
	if objs, err := teamqueue.DesiredShared(left, []gpuvcv1.Team{*left}); objs != nil || err != nil {
		t.Errorf("DesiredShared = %v, %v; want nil, nil with no queueing team in the pool", objs, err)
	}
}

// TestDesiredSharedRefusesWeightZero: Kueue divides a LocalQueue's usage by its
// weight, so 0 (allowed for a ClusterQueue per team) is refused in a
// usage-history pool, naming the field, the value, the limit and the fix.
func TestDesiredSharedRefusesWeightZero(t *testing.T) {
	_, err := teamqueue.DesiredShared(testobj.Team("adhoc", "a100").Borrow(2).Weight(0).Obj(), nil)
	if err == nil {
		t.Fatal("weight 0 accepted in a usage-history pool")
	}
	for _, part := range []string{"spec.queueing.weight: 0", "pool a100", "limit: 1–100", "set a weight of 1 or more"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
}
