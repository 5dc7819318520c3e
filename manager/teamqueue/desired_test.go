package teamqueue_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// quotas flattens a ClusterQueue's GPU quotas as "flavor/resource: nominal
// borrowing lending" (limits "-" when unset).
func quotas(t *testing.T, cq *unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _, _ := unstructured.NestedSlice(g.(map[string]any), "flavors")
		for _, f := range flavors {
			fm := f.(map[string]any)
			rs, _, _ := unstructured.NestedSlice(fm, "resources")
			for _, r := range rs {
				rm := r.(map[string]any)
				name := rm["name"].(string)
				if name == "cpu" || name == "memory" || name == "ephemeral-storage" {
					continue
				}
				str := func(k string) string {
					if v, ok := rm[k]; ok {
						return v.(string)
					}
					return "-"
				}
				out[fm["name"].(string)+"/"+name] = str("nominalQuota") + " " + str("borrowingLimit") + " " + str("lendingLimit")
			}
		}
	}
	return out
}

func TestDesired(t *testing.T) {
	for name, tc := range map[string]struct {
		team       *testobj.TeamWrapper
		wantQuotas map[string]string
		wantWeight string
		wantNames  []string // flavors
	}{
		"guarantee only: borrows nothing, lends everything": {
			team:       testobj.Team("vision", "a100").GPUs(4).Queued(),
			wantQuotas: map[string]string{"gpuvc-a100-gpu/nvidia.com/gpu": "4 0 -"},
			wantWeight: "1",
			wantNames:  []string{"gpuvc-a100-gpu"},
		},
		"borrowing, lending, weight and MIG profiles": {
			team: testobj.Team("nlp", "a100").GPUs(2).MIG("1g.10gb", 4).MIG("1g.10gb+me", 0).
				Borrow(6).BorrowMIG("1g.10gb+me", 1).Lend(1).Weight(3),
			wantQuotas: map[string]string{
				"gpuvc-a100-gpu/nvidia.com/gpu":                       "2 6 1",
				"gpuvc-a100-mig-1g.10gb/nvidia.com/mig-1g.10gb":       "4 0 -",
				"gpuvc-a100-mig-1g.10gb-me/nvidia.com/mig-1g.10gb.me": "0 1 -",
			},
			wantWeight: "3",
			wantNames:  []string{"gpuvc-a100-gpu", "gpuvc-a100-mig-1g.10gb", "gpuvc-a100-mig-1g.10gb-me"},
		},
		"no guarantee: a pure borrower": {
			team:       testobj.Team("adhoc", "h100").Borrow(2).Weight(0),
			wantQuotas: map[string]string{"gpuvc-h100-gpu/nvidia.com/gpu": "0 2 -"},
			wantWeight: "0",
			wantNames:  []string{"gpuvc-h100-gpu"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			team := tc.team.Obj()
			objs, err := teamqueue.Desired(team)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantQuotas, quotas(t, objs.ClusterQueue)); diff != "" {
				t.Errorf("quotas (-want +got):\n%s", diff)
			}
			if w, _, _ := unstructured.NestedString(objs.ClusterQueue.Object, "spec", "fairSharing", "weight"); w != tc.wantWeight {
				t.Errorf("weight %q, want %q", w, tc.wantWeight)
			}
			cohort, _, _ := unstructured.NestedString(objs.ClusterQueue.Object, "spec", "cohortName")
			if want := "gpuvc-" + team.Spec.Pool; cohort != want {
				t.Errorf("cohort %q, want %q", cohort, want)
			}
			reclaim, _, _ := unstructured.NestedString(objs.ClusterQueue.Object, "spec", "preemption", "reclaimWithinCohort")
			if reclaim != "Any" {
				t.Errorf("reclaimWithinCohort %q, want Any", reclaim)
			}
			var names []string
			for _, f := range objs.Flavors {
				names = append(names, f.GetName())
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("flavors (-want +got):\n%s", diff)
			}
			if got := objs.LocalQueue.GetNamespace(); got != "team-"+team.Name {
				t.Errorf("LocalQueue in %q, want the team's namespace", got)
			}
		})
	}
}

func TestDesiredIsNilWithoutQueueing(t *testing.T) {
	objs, err := teamqueue.Desired(testobj.Team("plain", "a100").GPUs(4).Obj())
	if err != nil || objs != nil {
		t.Fatalf("Desired = %v, %v; want nil, nil for a team without spec.queueing", objs, err)
	}
}

func TestCeilingIsGuaranteePlusBorrowing(t *testing.T) {
	spec := testobj.Team("nlp", "a100").GPUs(2).MIG("1g.10gb", 4).Borrow(6).BorrowMIG("1g.10gb", 2).Obj().Spec
	c := spec.CeilingQuota()
	if *c.GPUs != 8 || c.MIG["1g.10gb"] != 6 {
		t.Fatalf("ceiling gpus %d, mig %v; want 8 and 1g.10gb=6", *c.GPUs, c.MIG)
	}
	if *spec.Quota.GPUs != 2 || spec.Quota.MIG["1g.10gb"] != 4 {
		t.Fatalf("CeilingQuota changed the spec: %v", spec.Quota)
	}
}

// TestHostQuotaIsCeilingPlusQueue pins what the ResourceQuota of a queueing team
// allows, running and waiting together: the ceiling plus spec.queueing.maxQueued,
// each GPU kind defaulting to as much as its ceiling.
func TestHostQuotaIsCeilingPlusQueue(t *testing.T) {
	for name, tc := range map[string]struct {
		team     *gpuvcv1.Team
		wantGPUs int32
		wantMIG  map[string]int32
	}{
		"not queueing: spec.quota": {testobj.Team("a", "a100").GPUs(4).Obj(), 4, nil},
		"default: twice the ceiling": {
			testobj.Team("a", "a100").GPUs(2).MIG("1g.10gb", 4).Borrow(6).BorrowMIG("1g.10gb", 2).Obj(), 16, map[string]int32{"1g.10gb": 12},
		},
		"no borrowing, default": {testobj.Team("a", "a100").GPUs(3).Queued().Obj(), 6, nil},
		"set for GPUs; MIG defaults": {
			testobj.Team("a", "a100").GPUs(2).MIG("1g.10gb", 1).Borrow(2).MaxQueued(10).Obj(), 14, map[string]int32{"1g.10gb": 2},
		},
		"set for a profile; GPUs default": {
			testobj.Team("a", "a100").GPUs(1).MIG("1g.10gb", 1).Queued().MaxQueuedMIG("1g.10gb", 0).Obj(), 2, map[string]int32{"1g.10gb": 1},
		},
		"0: the ceiling, nothing waits beyond": {testobj.Team("a", "a100").GPUs(2).Borrow(1).MaxQueued(0).Obj(), 3, nil},
		"pure borrower":                        {testobj.Team("a", "a100").Borrow(2).Obj(), 4, nil},
	} {
		t.Run(name, func(t *testing.T) {
			before := tc.team.Spec.DeepCopy()
			q := tc.team.Spec.HostQuota()
			got := map[string]int32{}
			for p, n := range q.MIG {
				got[p] = n
			}
			if len(got) == 0 {
				got = nil
			}
			if q.GPUs == nil || *q.GPUs != tc.wantGPUs {
				t.Errorf("gpus = %v, want %d", q.GPUs, tc.wantGPUs)
			}
			if diff := cmp.Diff(tc.wantMIG, got); diff != "" {
				t.Errorf("mig (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &tc.team.Spec); diff != "" {
				t.Errorf("HostQuota changed the spec (-before +after):\n%s", diff)
			}
		})
	}
}
