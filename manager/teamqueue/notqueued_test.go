package teamqueue_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localkueue"
	"github.com/gpuvc/gpuvc/syncer/queued"
)

// TestPodKueueNeverTookIsToldWhy: a pod gpuvc gates for Kueue but Kueue never
// takes (no Workload) gets, after the grace period (notQueuedAfter here), a
// Warning event NotQueued saying what to check; a pod waiting in Kueue (its
// Workload tried, no room) gets none. Kueue is made to leave the team's
// namespace out as its managedJobsNamespaceSelector would: its pod webhooks
// skip the namespace, so Kueue never marks the pod as its own nor makes a
// Workload for it.
func TestPodKueueNeverTookIsToldWhy(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("untaken", "untaken").GPUs(1).Queued().MaxQueued(2).Obj())
	waitActive(ctx, t, "untaken")
	ns := gpuvcv1.HostNamespace("untaken")
	dumpWorkloadsOnFailure(t, ns)

	// Kueue takes these two: one admitted, one waiting for the team's GPU.
	queuePod(ctx, t, "untaken", "taken-0", "")
	queuePod(ctx, t, "untaken", "taken-1", "")
	waitWorkload(ctx, t, ns, "taken-1", "QuotaReserved", "False")

	kueueSkipsNamespace(ctx, t, ns)
	gpuPods(ctx, t, "untaken", "untaken", 1)
	start := time.Now()
	podEvent(ctx, t, ns, "untaken-0", "Warning", queued.ReasonNotQueued,
		"no Kueue Workload for this pod after "+notQueuedAfter.String(), "does its pod integration take namespace "+ns, "managedJobsNamespaceSelector")
	if waited := time.Since(start); waited < notQueuedAfter-time.Second {
		t.Errorf("NotQueued event %s after the pod was created, before the grace period %s", waited, notQueuedAfter)
	}
	if wl, err := workloadOf(ctx, ns, "untaken-0"); wl != nil || err != nil {
		t.Errorf("pod untaken-0: Workload %v (error %v), want none", wl, err)
	}
	// taken-1 was created before untaken-0, so its grace period is over too.
	noPodEvent(ctx, t, ns, "taken-1", queued.ReasonNotQueued)
	noPodEvent(ctx, t, ns, "taken-0", queued.ReasonNotQueued)

	// The manager (in this process) counts it, until the pod is deleted.
	notQueuedPods(ctx, t, "untaken", 1)
	if err := host.Client.CoreV1().Pods(ns).Delete(ctx, "untaken-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	notQueuedPods(ctx, t, "untaken", 0)
}

// notQueuedPods waits until the manager's gpuvc_team_not_queued_pods of team
// is want (0: no series).
func notQueuedPods(ctx context.Context, t *testing.T, team string, want float64) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, fmt.Sprintf("gpuvc_team_not_queued_pods{team=%q} %v", team, want), func(context.Context) (bool, string, error) {
		families, err := metrics.Registry.Gather()
		if err != nil {
			return false, "", err
		}
		got := 0.0
		for _, f := range families {
			if f.GetName() != "gpuvc_team_not_queued_pods" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "team" && l.GetValue() == team {
						got = m.GetGauge().GetValue()
					}
				}
			}
		}
		return got == want, fmt.Sprint(got), nil
	})
}

// kueueSkipsNamespace leaves ns out of Kueue's pod webhooks until the test
// ends, as Kueue's managedJobsNamespaceSelector would.
func kueueSkipsNamespace(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	hooks := host.Client.AdmissionregistrationV1()
	exclude := func(sel *metav1.LabelSelector) {
		for i, r := range sel.MatchExpressions {
			if r.Key == "kubernetes.io/metadata.name" && r.Operator == metav1.LabelSelectorOpNotIn {
				sel.MatchExpressions[i].Values = append(slices.Clone(r.Values), ns)
			}
		}
	}
	forPods := func(rules []admissionregistrationv1.RuleWithOperations) bool {
		return slices.ContainsFunc(rules, func(r admissionregistrationv1.RuleWithOperations) bool { return slices.Contains(r.Resources, "pods") })
	}

	m, err := hooks.MutatingWebhookConfigurations().Get(ctx, localkueue.MutatingConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mOrig := m.DeepCopy()
	for i := range m.Webhooks {
		if forPods(m.Webhooks[i].Rules) && m.Webhooks[i].NamespaceSelector != nil {
			exclude(m.Webhooks[i].NamespaceSelector)
		}
	}
	if _, err := hooks.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur, err := hooks.MutatingWebhookConfigurations().Get(context.Background(), localkueue.MutatingConfigName, metav1.GetOptions{})
		if err == nil {
			cur.Webhooks = mOrig.Webhooks
			_, err = hooks.MutatingWebhookConfigurations().Update(context.Background(), cur, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("restoring Kueue's mutating webhooks: %v", err)
		}
	})

	v, err := hooks.ValidatingWebhookConfigurations().Get(ctx, localkueue.ValidatingConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vOrig := v.DeepCopy()
	for i := range v.Webhooks {
		if forPods(v.Webhooks[i].Rules) && v.Webhooks[i].NamespaceSelector != nil {
			exclude(v.Webhooks[i].NamespaceSelector)
		}
	}
	if _, err := hooks.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur, err := hooks.ValidatingWebhookConfigurations().Get(context.Background(), localkueue.ValidatingConfigName, metav1.GetOptions{})
		if err == nil {
			cur.Webhooks = vOrig.Webhooks
			_, err = hooks.ValidatingWebhookConfigurations().Update(context.Background(), cur, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("restoring Kueue's validating webhooks: %v", err)
		}
	})
	// The API server reads webhook configurations from an informer: wait until
	// a pod created (dry run) no longer gets Kueue's mark.
	poll.Until(ctx, t, 30*time.Second, "Kueue's pod webhooks skip "+ns, func(ctx context.Context) (bool, error) {
		p, err := host.Client.CoreV1().Pods(ns).Create(ctx, testobj.Pod("dry-run", ns).GPUs("1").Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && p.Labels[kueueManagedLabel] == "", err
	})
}

// kueueManagedLabel is how Kueue's pod webhook marks a pod as its own; Kueue
// makes Workloads only for pods so marked.
const kueueManagedLabel = "kueue.x-k8s.io/managed"
