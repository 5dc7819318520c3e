package team_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
)

const (
	vcNamespace = "vcluster.loft.sh/namespace"
	npTeam      = "walls"
	npNS        = "team-walls"
)

// teamNetpol is a NetworkPolicy as vCluster v0.36.1 copies a team's into the
// host namespace: named <name>-x-<namespace>-x-<release>, labelled with its
// marker and the virtual namespace, its pod selector extended by both.
func teamNetpol(name, vns string, types []networkingv1.PolicyType, sel metav1.LabelSelector) *networkingv1.NetworkPolicy {
	s := sel.DeepCopy()
	if s.MatchLabels == nil {
		s.MatchLabels = map[string]string{}
	}
	s.MatchLabels[vcNamespace] = vns
	s.MatchLabels[contract.LabelVClusterManagedBy] = npTeam
	p := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-x-" + vns + "-x-" + npTeam, Namespace: npNS,
			Labels: map[string]string{contract.LabelVClusterManagedBy: npTeam, vcNamespace: vns}},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *s, PolicyTypes: types},
	}
	peer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
		"role": "client", vcNamespace: vns, contract.LabelVClusterManagedBy: npTeam}}}
	for _, ty := range types {
		if ty == networkingv1.PolicyTypeIngress {
			p.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{peer}}}
		} else {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{peer}}}
		}
	}
	return p
}

var (
	ingressOnly = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egressOnly  = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	bothWays    = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
)

// pod is a host pod's labels as vCluster writes them for a team pod in the
// virtual namespace vns.
func pod(vns string, kv ...string) labels.Set {
	l := labels.Set{vcNamespace: vns, contract.LabelVClusterManagedBy: npTeam}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return l
}

// samplePods are the label sets the test judges gpuvc's policies on: team pods
// of every kind the team policies below name, and the host pods no team
// policy can select.
var samplePods = map[string]labels.Set{
	"control plane":    {"app": "vcluster", "release": npTeam},
	"reservation pod":  {contract.LabelRole: contract.RoleReservation, contract.LabelTeam: npTeam},
	"CoreDNS":          pod("kube-system", "k8s-app", "vcluster-kube-dns"),
	"web":              pod("default", "app", "web"),
	"web in prod":      pod("prod", "app", "web"),
	"db":               pod("default", "tier", "db"),
	"cache":            pod("default", "tier", "cache"),
	"front tier":       pod("default", "tier", "front"),
	"batch job":        pod("default", "job", "nightly"),
	"plain pod":        pod("default"),
	"quarantined web":  pod("default", "app", "web", "quarantine", "yes"),
	"ml-owned":         pod("default", "owner", "ml"),
	"data-owned":       pod("default", "owner", "data"),
	"a pod in staging": pod("staging", "app", "api"),
}

// selected returns the sample pods any of the policies selects.
func selected(t *testing.T, policies []networkingv1.NetworkPolicy) []string {
	t.Helper()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(samplePods)) {
		for _, p := range policies {
			sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
			require.NoError(t, err, "policy %s", p.Name)
			if sel.Matches(samplePods[name]) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// allowances returns gpuvc's same-namespace allowances of one direction, as
// stored by the API server.
func allowances(ctx context.Context, t *testing.T, dir string) []networkingv1.NetworkPolicy {
	t.Helper()
	list := &networkingv1.NetworkPolicyList{}
	require.NoError(t, c.List(ctx, list, client.InNamespace(npNS)))
	var out []networkingv1.NetworkPolicy
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, team.NamespaceAllowPrefix+"-"+dir+"-") {
			out = append(out, p)
		}
	}
	return out
}

// allowed polls until gpuvc's allowance of a direction selects exactly want
// (sample pod names), and checks the shape of each allowance policy.
func allowed(ctx context.Context, t *testing.T, dir string, want ...string) []networkingv1.NetworkPolicy {
	t.Helper()
	slices.Sort(want)
	var got []networkingv1.NetworkPolicy
	eventually(ctx, t, dir+" allowance selecting "+strings.Join(want, ", "), func(ctx context.Context) (bool, string) {
		got = allowances(ctx, t, dir)
		sel := selected(t, got)
		return slices.Equal(want, sel), fmt.Sprintf("%d policies selecting %v", len(got), sel)
	})
	for _, p := range got {
		require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyType(strings.ToUpper(dir[:1]) + dir[1:])}, p.Spec.PolicyTypes, p.Name)
		var peers []networkingv1.NetworkPolicyPeer
		if dir == "ingress" {
			require.Len(t, p.Spec.Ingress, 1, p.Name)
			require.Empty(t, p.Spec.Egress, p.Name)
			peers = p.Spec.Ingress[0].From
		} else {
			require.Len(t, p.Spec.Egress, 1, p.Name)
			require.Empty(t, p.Spec.Ingress, p.Name)
			peers = p.Spec.Egress[0].To
		}
		// The allowance only ever names the namespace's own pods.
		require.Equal(t, []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}, peers, p.Name)
		require.Equal(t, "gpuvc", p.Labels[team.LabelManagedBy], p.Name)
	}
	return got
}

func honored(ctx context.Context, t *testing.T, status metav1.ConditionStatus, reason string, says ...string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	eventually(ctx, t, "NetworkPoliciesHonored "+string(status)+" "+reason, func(ctx context.Context) (bool, string) {
		tm := &gpuvcv1.Team{}
		if err := c.Get(ctx, ns(npTeam), tm); err != nil {
			return false, err.Error()
		}
		cond = apimeta.FindStatusCondition(tm.Status.Conditions, gpuvcv1.ConditionNetworkPoliciesHonored)
		if cond == nil {
			return false, "not reported"
		}
		ok := cond.Status == status && cond.Reason == reason
		for _, s := range says {
			ok = ok && strings.Contains(cond.Message, s)
		}
		return ok, string(cond.Status) + " " + cond.Reason + ": " + cond.Message
	})
	return cond
}

// TestTeamPoliciesNarrowTheNamespaceAllowance: against the real API server and
// the running manager, gpuvc's same-namespace allowances select exactly the
// pods no team NetworkPolicy (as vCluster copies it to the host) selects, per
// direction, for every selector operator; policies without vCluster's marker
// do not count; past the bound gpuvc keeps the namespace open and says so on
// the Team (condition and event), and recovers once the team simplifies.
func TestTeamPoliciesNarrowTheNamespaceAllowance(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team(npTeam, "a100").GPUs(1).Obj())
	everyPod := slices.Sorted(maps.Keys(samplePods))

	// No team policy: the namespace is open to itself both ways.
	allowed(ctx, t, "ingress", everyPod...)
	allowed(ctx, t, "egress", everyPod...)
	honored(ctx, t, metav1.ConditionTrue, team.ReasonPoliciesHonored, "no NetworkPolicies")

	create := func(p *networkingv1.NetworkPolicy) {
		t.Helper()
		require.NoError(t, c.Create(ctx, p))
	}
	create(teamNetpol("web", "default", ingressOnly, metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}))
	create(teamNetpol("data", "default", bothWays, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"db", "cache"}}}}))
	create(teamNetpol("jobs", "default", egressOnly, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "job", Operator: metav1.LabelSelectorOpExists}}}))
	create(teamNetpol("not-ml", "default", ingressOnly, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "owner", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ml"}},
		{Key: "owner", Operator: metav1.LabelSelectorOpExists}}}))
	create(teamNetpol("clean", "default", egressOnly, metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "quarantine", Operator: metav1.LabelSelectorOpDoesNotExist}}}))
	// A whole virtual namespace isolated by an empty podSelector.
	create(teamNetpol("all", "staging", ingressOnly, metav1.LabelSelector{}))
	// A policy an admin wrote in the namespace, without vCluster's marker: it
	// selects web in prod, but is not the team's and narrows nothing of gpuvc's.
	admin := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "admin-monitoring", Namespace: npNS},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: ingressOnly},
	}
	create(admin)

	in := allowed(ctx, t, "ingress", "control plane", "reservation pod", "CoreDNS", "web in prod", "front tier",
		"batch job", "plain pod", "ml-owned")
	out := allowed(ctx, t, "egress", "control plane", "reservation pod", "CoreDNS", "web in prod", "quarantined web",
		"front tier", "plain pod", "ml-owned", "data-owned", "a pod in staging")
	t.Logf("ingress allowances: %d, egress: %d", len(in), len(out))
	require.LessOrEqual(t, len(in), team.MaxNamespaceAllowances)
	honored(ctx, t, metav1.ConditionTrue, team.ReasonPoliciesHonored, "6 NetworkPolicies", "ingress: 4 policies", "egress: 3 policies")

	// gpuvc's own policies keep what every pod keeps: the default deny selects
	// every pod, the team's API server and DNS stay reachable.
	deny := &networkingv1.NetworkPolicy{}
	get(ctx, t, inNS(npNS, team.NetworkPolicyName), deny, nil)
	require.Equal(t, everyPod, selected(t, []networkingv1.NetworkPolicy{*deny}))
	dns := &networkingv1.NetworkPolicy{}
	get(ctx, t, inNS(npNS, team.DNSPolicyName), dns, nil)
	require.Equal(t, []string{"CoreDNS"}, selected(t, []networkingv1.NetworkPolicy{*dns}))

	// Past the bound: six ingress policies, each on two labels of its own,
	// multiply to 2^6 selectors. Ingress falls back to the whole namespace,
	// egress is still honored; the Team says why, with the count, the limit
	// and the fix, and an event.
	var many []*networkingv1.NetworkPolicy
	for i := range 6 {
		p := teamNetpol(fmt.Sprintf("pair%d", i), "default", ingressOnly, metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: fmt.Sprintf("a%d", i), Operator: metav1.LabelSelectorOpExists},
			{Key: fmt.Sprintf("b%d", i), Operator: metav1.LabelSelectorOpExists}}})
		create(p)
		many = append(many, p)
	}
	allowed(ctx, t, "ingress", everyPod...)
	eventually(ctx, t, "past the bound, one allowance selecting every pod", func(ctx context.Context) (bool, string) {
		a := allowances(ctx, t, "ingress")
		return len(a) == 1 && len(a[0].Spec.PodSelector.MatchLabels)+len(a[0].Spec.PodSelector.MatchExpressions) == 0, fmt.Sprintf("%d allowances", len(a))
	})
	allowed(ctx, t, "egress", "control plane", "reservation pod", "CoreDNS", "web in prod", "quarantined web",
		"front tier", "plain pod", "ml-owned", "data-owned", "a pod in staging")
	cond := honored(ctx, t, metav1.ConditionFalse, team.ReasonTooManySelectors,
		"the 10 ingress policies", fmt.Sprintf("more than the limit of %d", team.MaxNamespaceAllowances),
		"do not narrow ingress among the team's own pods", "fix: select pods by fewer independent labels")
	t.Log(cond.Message)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		events := &corev1.EventList{}
		_ = c.List(context.Background(), events)
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Team" {
				t.Logf("event %s %s/%s %s %s: %s", e.Namespace, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message)
			}
		}
	})
	eventually(ctx, t, "a TooManySelectors event on the Team", func(ctx context.Context) (bool, string) {
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.MatchingFields{"involvedObject.name": npTeam}); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Team" && e.Reason == team.ReasonTooManySelectors && strings.Contains(e.Message, "more than the limit") {
				return true, ""
			}
			seen = append(seen, e.Namespace+"/"+e.InvolvedObject.Kind+"/"+e.Reason)
		}
		return false, fmt.Sprint(seen)
	})

	// The team simplifies: back under the bound, honored again, and the
	// allowances past the new count are gone.
	for _, p := range many {
		require.NoError(t, c.Delete(ctx, p))
	}
	allowed(ctx, t, "ingress", "control plane", "reservation pod", "CoreDNS", "web in prod", "front tier",
		"batch job", "plain pod", "ml-owned")
	honored(ctx, t, metav1.ConditionTrue, team.ReasonPoliciesHonored, "6 NetworkPolicies")
	eventually(ctx, t, "only the allowances in use", func(ctx context.Context) (bool, string) {
		n := len(allowances(ctx, t, "ingress"))
		return n == len(in), fmt.Sprintf("%d ingress allowances, want %d", n, len(in))
	})
}

// TestDefaultDenyOffRemovesGpuvcPolicies: a Team that turns default deny off
// loses every policy gpuvc wrote, the allowances included, and the condition
// says the team's policies now apply alone.
func TestDefaultDenyOffRemovesGpuvcPolicies(t *testing.T) {
	ctx := integration(t)
	const name, hostNS = "opened", "team-opened"
	createTeam(ctx, t, testobj.Team(name, "a100").GPUs(1).Obj())
	gpuvcPolicies := func(ctx context.Context) ([]string, error) {
		list := &networkingv1.NetworkPolicyList{}
		if err := c.List(ctx, list, client.InNamespace(hostNS), client.MatchingLabels{team.LabelManagedBy: "gpuvc"}); err != nil {
			return nil, err
		}
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		return names, nil
	}
	eventually(ctx, t, "gpuvc's policies", func(ctx context.Context) (bool, string) {
		names, err := gpuvcPolicies(ctx)
		want := []string{team.NetworkPolicyName, team.DNSPolicyName, team.NamespaceAllowPrefix + "-egress-0",
			team.NamespaceAllowPrefix + "-ingress-0", team.ReservationPolicyName, team.ControlPlanePolicyName}
		slices.Sort(want)
		return err == nil && slices.Equal(want, names), fmt.Sprint(names, err)
	})

	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, ns(name), tm))
	orig := tm.DeepCopy()
	off := false
	tm.Spec.Network = &gpuvcv1.Network{DefaultDeny: &off}
	require.NoError(t, c.Patch(ctx, tm, client.MergeFrom(orig)))
	eventually(ctx, t, "no policy of gpuvc's left", func(ctx context.Context) (bool, string) {
		names, err := gpuvcPolicies(ctx)
		return err == nil && len(names) == 0, fmt.Sprint(names, err)
	})
	eventually(ctx, t, "NetworkPoliciesHonored NoDefaultDeny", func(ctx context.Context) (bool, string) {
		got := &gpuvcv1.Team{}
		if err := c.Get(ctx, ns(name), got); err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionNetworkPoliciesHonored)
		if cond == nil {
			return false, "not reported"
		}
		return cond.Status == metav1.ConditionTrue && cond.Reason == team.ReasonNoDefaultDeny &&
			strings.Contains(cond.Message, "spec.network.defaultDeny is false"), cond.Reason + ": " + cond.Message
	})
}
