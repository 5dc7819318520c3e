package team

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// describe prints a team for a platform engineer: what was decided, what is used,
// what the manager reports and how to reach the team, conditions last as kubectl
// describe does.
func describe(w io.Writer, t *gpuvcv1.Team, now time.Time) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-12s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	line("Name", "%s", t.Name)
	line("Pool", "%s", t.Spec.Pool)
	line("Namespace", "%s", orDash(t.Status.Namespace))
	line("Ready", "%s", readyLine(t))
	line("Age", "%s", age(t.CreationTimestamp, now))
	line("Members", "%s", strings.ReplaceAll(membersColumn(t), ",", ", "))
	fmt.Fprintln(w, "Quota:")
	q := t.Spec.Quota
	line("  GPUs", "%s", gpuQuotaLine(t))
	line("  MIG", "%s", migQuotaLine(t))
	line("  CPU", "%s", quantityLine(q.CPU))
	line("  Memory", "%s", quantityLine(q.Memory))
	line("  Storage", "%s", quantityLine(q.Storage))
	for _, class := range slices.Sorted(maps.Keys(q.StorageClasses)) {
		fmt.Fprintf(w, "    class %s: %s\n", class, storageClassLine(q.StorageClasses[class]))
	}
	if q.Pods != nil {
		line("  Pods", "%d", *q.Pods)
	} else {
		line("  Pods", "not limited")
	}
	if t.Spec.MaxGPUsPerPod != nil {
		line("  Per pod", "at most %d GPUs", *t.Spec.MaxGPUsPerPod)
	} else {
		line("  Per pod", "not limited")
	}
	if t.Spec.Queueing != nil {
		line("Queue", "%s", queueLine(t))
		queueTable(w, t.Status.Queue)
		line("Priorities", "%s", prioritiesLine(t.Spec.Queueing.PriorityClasses))
	}
	line("DRA", "%s", draLine(&t.Spec))
	line("Tolerates", "%s", toleratesLine(t.Spec.Placement))
	line("Sharing", "%s", sharingLine(t.Spec.GPUSharing))
	if g := gpuTimeLine(t.Status.GPUSeconds); g != "" {
		line("GPU time", "%s", g)
	}
	line("Idle", "%s", idleLine(t, now))
	line("PodSecurity", "%s", podSecurityLine(t.Spec.PodSecurity))
	line("Network", "%s", networkLine(t.Spec.Network))
	line("Kubeconfig", "%s", kubeconfigLine(t))
	fmt.Fprintln(w, "Conditions:")
	if len(t.Status.Conditions) == 0 {
		fmt.Fprintln(w, "  (none yet: is the gpuvc manager running?)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range t.Status.Conditions {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(c.LastTransitionTime, now), c.Message)
	}
	_ = tw.Flush()
}

// readyLine is the Ready status with why not, what a deletion waits for, and
// whether it describes an older spec.
func readyLine(t *gpuvcv1.Team) string {
	var why []string
	if r := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionReady); r != nil && r.Status != metav1.ConditionTrue {
		if !t.DeletionTimestamp.IsZero() && (r.Reason == gpuvcv1.ReasonDeleting || r.Reason == gpuvcv1.ReasonUninstallFailed) {
			why = append(why, r.Reason+": "+r.Message)
		} else {
			why = append(why, r.Reason)
		}
	}
	if t.Status.ObservedGeneration != 0 && t.Status.ObservedGeneration != t.Generation {
		why = append(why, fmt.Sprintf("for spec generation %d; the manager has not yet acted on generation %d", t.Status.ObservedGeneration, t.Generation))
	}
	if len(why) == 0 {
		return readyColumn(t)
	}
	return readyColumn(t) + " (" + strings.Join(why, "; ") + ")"
}

func age(ts metav1.Time, now time.Time) string {
	if ts.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(ts.Time))
}

func gpuQuotaLine(t *gpuvcv1.Team) string {
	if t.Spec.Quota.GPUs == nil {
		return "not limited"
	}
	return gpuColumn(t) + " (used/quota)"
}

func migQuotaLine(t *gpuvcv1.Team) string {
	if len(t.Spec.Quota.MIG) == 0 {
		return "none"
	}
	return strings.ReplaceAll(migColumn(t), ",", ", ") + " (used/quota)"
}

func quantityLine(q *resource.Quantity) string {
	if q == nil {
		return "not limited"
	}
	return q.String()
}

func sharingLine(s *gpuvcv1.GPUSharing) string {
	if s == nil {
		return "off: pods get whole GPUs"
	}
	var parts []string
	if s.Fractions {
		parts = append(parts, fmt.Sprintf("fractional GPUs, at most %d pods per shared GPU", s.MaxPodsPerSharedGPU))
	} else {
		parts = append(parts, "no fractional GPUs")
	}
	if s.WholeGPUAs != "" {
		parts = append(parts, "plain GPU requests get a "+s.WholeGPUAs+" MIG slice")
	} else {
		parts = append(parts, "plain GPU requests get whole GPUs")
	}
	return strings.Join(parts, "; ")
}

func podSecurityLine(level string) string {
	if level == "" {
		return "baseline (default)"
	}
	return level
}

func networkLine(n *gpuvcv1.Network) string {
	deny, egress := true, []string(nil)
	if n != nil {
		if n.DefaultDeny != nil {
			deny = *n.DefaultDeny
		}
		egress = n.AllowedEgressCIDRs
	}
	s := "default deny (only the team's own pods and DNS)"
	if !deny {
		s = "open (no default deny)"
	}
	if len(egress) > 0 {
		s += "; extra egress to " + strings.Join(egress, ", ")
	}
	return s
}

// kubeconfigLine says how to get the team's kubeconfig, or why it cannot be had yet.
func kubeconfigLine(t *gpuvcv1.Team) string {
	k := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionKubeconfigReady)
	switch {
	case k != nil && k.Status == metav1.ConditionTrue:
		s := fmt.Sprintf("gpuvc team kubeconfig %s -f %s.kubeconfig", t.Name, t.Name)
		if t.Status.KubeconfigSecret != "" {
			s = fmt.Sprintf("secret %s/%s; save it with: %s", t.Status.Namespace, t.Status.KubeconfigSecret, s)
		}
		return s
	case k != nil:
		return fmt.Sprintf("not yet (%s: %s)", k.Reason, k.Message)
	default:
		return "not yet (the manager has not reported it; is it running?)"
	}
}

// queueLine is the team's standing in Kueue: guarantee, use, borrowing, waiting pods.
func queueLine(t *gpuvcv1.Team) string {
	q := t.Status.Queue
	if q == nil {
		return fmt.Sprintf("elastic: %d GPUs guaranteed, may borrow %d (no report from Kueue yet)", t.Spec.GuaranteedGPUs(), t.Spec.BorrowableGPUs())
	}
	if len(q.Flavors) > 0 { // the figures are in the table below
		return fmt.Sprintf("elastic: %d pods admitted, %d queued; fair-share %d (ClusterQueue %s)",
			q.AdmittedPods, q.QueuedPods, q.WeightedShare, q.ClusterQueue)
	}
	return fmt.Sprintf("elastic: %d GPUs guaranteed, %d in use, %d borrowed of %d allowed; %d pods admitted, %d queued (ClusterQueue %s)",
		q.GuaranteedGPUs, q.UsedGPUs, q.BorrowedGPUs, q.BorrowingLimitGPUs, q.AdmittedPods, q.QueuedPods, q.ClusterQueue)
}

// queueTable prints the standing per GPU kind (whole GPUs, MIG profiles), in
// devices: lent is the part of the guarantee other teams of the pool use now.
func queueTable(w io.Writer, q *gpuvcv1.QueueStatus) {
	if q == nil || len(q.Flavors) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  RESOURCE\tGUARANTEED\tMAY BORROW\tUSED\tBORROWED\tLENT\tQUEUED")
	for _, f := range q.Flavors {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\n", f.Resource, f.Guaranteed, f.BorrowingLimit, f.Used, f.Borrowed, f.Lent, f.Queued)
	}
	_ = tw.Flush()
}

// prioritiesLine says which Kueue WorkloadPriorityClasses the team's pods may
// name (kueue.x-k8s.io/priority-class); any other is removed from the pod.
func prioritiesLine(classes []string) string {
	if len(classes) == 0 {
		return "the team's own (pods may name no WorkloadPriorityClass; spec.queueing.priorityClasses)"
	}
	return strings.Join(classes, ", ") + " (WorkloadPriorityClasses pods may name)"
}

// draLine says whether the team's pods may use DRA ResourceClaims and of
// which DeviceClasses.
func draLine(s *gpuvcv1.TeamSpec) string {
	classes := s.AllowedDeviceClasses()
	if classes == nil {
		return "off: pods with resourceClaims are refused (spec.dra)"
	}
	from := "spec.dra.deviceClasses"
	if len(s.DRA.DeviceClasses) == 0 {
		from = "the default"
	}
	return fmt.Sprintf("claims of %s (%s); each device counts as one GPU of the quota", strings.Join(classes, ", "), from)
}

// toleratesLine says which tolerations the team's pods keep beyond the pool's
// and Kubernetes' own (not-ready/unreachable); any other is removed.
func toleratesLine(p *gpuvcv1.Placement) string {
	const builtin = "its pool's taint and not-ready/unreachable for at most 300 s"
	if p == nil || len(p.AllowedTolerations) == 0 {
		return builtin + " (nothing else: spec.placement.allowedTolerations)"
	}
	var parts []string
	for _, t := range p.AllowedTolerations {
		op := t.Operator
		if op == "" {
			op = "Equal"
		}
		s := t.Key + " " + op
		if t.Value != "" {
			s += " " + t.Value
		}
		if t.Effect != "" {
			s += ":" + t.Effect
		} else {
			s += " (any effect)"
		}
		parts = append(parts, s)
	}
	return builtin + ", and " + strings.Join(parts, ", ")
}

// storageClassLine is one StorageClass's limits, e.g. "100Gi in at most 4 claims".
func storageClassLine(c gpuvcv1.StorageClassQuota) string {
	var parts []string
	if c.Storage != nil {
		parts = append(parts, c.Storage.String())
	}
	if c.Claims != nil {
		parts = append(parts, fmt.Sprintf("at most %d claims", *c.Claims))
	}
	return strings.Join(parts, " in ")
}
