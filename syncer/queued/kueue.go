package queued

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Kinds of Kueue's v1beta2 API this package reads.
var (
	WorkloadKind     = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Workload"}
	localQueueKind   = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "LocalQueue"}
	clusterQueueKind = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "ClusterQueue"}
)

// waiting returns Kueue's reason why a Workload waits for quota, "" if it does
// not (admitted, finished, or not yet looked at).
func waiting(wl *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	var reserved, msg string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch m["type"] {
		case "QuotaReserved":
			reserved, _ = m["status"].(string)
			msg, _ = m["message"].(string)
		case "Admitted", "Finished":
			if m["status"] == "True" {
				return ""
			}
		}
	}
	if reserved != "False" {
		return ""
	}
	return msg
}

// podOf names the pod a Workload of Kueue's plain-Pod integration stands for.
func podOf(wl *unstructured.Unstructured) string {
	for _, o := range wl.GetOwnerReferences() {
		if o.Kind == "Pod" && o.APIVersion == "v1" {
			return o.Name
		}
	}
	return ""
}

// usageBasedAdmission is the admission mode of a ClusterQueue that orders its
// LocalQueues by past use (Kueue's AdmissionFairSharing).
const usageBasedAdmission = "UsageBasedAdmissionFairSharing"

// gpuStanding summarises a team's whole-GPU quota (its ClusterQueue) and use
// (the GPUs its Workloads hold: the ClusterQueue's own status lags behind the
// decision that left a pod waiting): "uses 4 of 4 guaranteed GPUs and borrows 2
// (limit 2)".
func gpuStanding(cq *unstructured.Unstructured, workloads []unstructured.Unstructured) string {
	var nominal, limit, used resource.Quantity
	var hasLimit bool
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _, _ := unstructured.NestedSlice(g.(map[string]any), "flavors")
		for _, f := range flavors {
			rs, _, _ := unstructured.NestedSlice(f.(map[string]any), "resources")
			for _, r := range rs {
				rm := r.(map[string]any)
				if rm["name"] != contract.ResourceGPU {
					continue
				}
				add(&nominal, rm["nominalQuota"])
				if v, ok := rm["borrowingLimit"]; ok {
					hasLimit = true
					add(&limit, v)
				}
			}
		}
	}
	for i := range workloads {
		if !holdsQuota(&workloads[i]) {
			continue
		}
		sets, _, _ := unstructured.NestedSlice(workloads[i].Object, "status", "admission", "podSetAssignments")
		for _, ps := range sets {
			usage, _, _ := unstructured.NestedMap(ps.(map[string]any), "resourceUsage")
			add(&used, usage[contract.ResourceGPU])
		}
	}
	borrowed := used.DeepCopy()
	borrowed.Sub(nominal)
	if borrowed.Sign() < 0 {
		borrowed = resource.Quantity{}
	}
	if mode, _, _ := unstructured.NestedString(cq.Object, "spec", "admissionScope", "admissionMode"); mode == usageBasedAdmission {
		// A usage-history pool's shared ClusterQueue: its quota is the pool's,
		// and the order is by past use (manager/teamqueue, DesiredShared).
		return fmt.Sprintf("uses %s GPUs of the %s its pool's teams share, where the team with the least recent use for its weight goes first", used.String(), nominal.String())
	}
	s := fmt.Sprintf("uses %s of %s guaranteed GPUs", used.String(), nominal.String())
	if hasLimit {
		s += fmt.Sprintf(" and borrows %s (limit %s)", borrowed.String(), limit.String())
	}
	return s
}

// holdsQuota: the Workload has quota reserved and has not finished.
func holdsQuota(wl *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	reserved := false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch {
		case m["type"] == "QuotaReserved" && m["status"] == "True":
			reserved = true
		case m["type"] == "Finished" && m["status"] == "True":
			return false
		}
	}
	return reserved
}

func add(sum *resource.Quantity, v any) {
	str, ok := v.(string)
	if !ok {
		if n, isInt := v.(int64); isInt {
			str = fmt.Sprint(n)
		}
	}
	if q, err := resource.ParseQuantity(strings.TrimSpace(str)); err == nil {
		sum.Add(q)
	}
}

// message is the event a waiting pod gets.
func message(team, cohort, standing, reason string) string {
	s := "queued: team " + team
	if standing != "" {
		s += " " + standing
	}
	if cohort != "" {
		s += " in cohort " + cohort
	}
	return s + "; Kueue: " + reason
}

// eventType of the waiting pod's event: a Warning, so `kubectl describe pod`
// and `kubectl get events` show it among the pod's troubles.
const eventType = corev1.EventTypeWarning

// ReasonQueued names the event.
const ReasonQueued = "Queued"
