package team

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/complement"
)

// A team's NetworkPolicies narrow its own traffic as written. NetworkPolicies
// add up, so gpuvc cannot open the namespace to itself with one policy selecting
// every pod: that would admit everything a team's policy leaves out. Instead,
// per direction, gpuvc's same-namespace allowance selects exactly the pods no
// team policy of that direction selects (the complement of their pod selectors,
// manager/complement), one host policy per selector of the complement. A pod a
// team policy selects gets what the team's policies allow, plus what every pod
// keeps (desiredNetworkPolicy: the team's API server, DNS, egress CIDRs).

// MaxNamespaceAllowances bounds the same-namespace allowance policies per
// direction. Past it (team selectors on many independent labels multiply),
// that direction keeps the whole namespace open to itself and the Team's
// condition NetworkPoliciesHonored says so.
const MaxNamespaceAllowances = 32

// maxAllowanceValues bounds the keys and values of one allowance's selector:
// a NotIn list gathers the values of every team policy on that key.
const maxAllowanceValues = 512

// namespaceAllowance is gpuvc's same-namespace allowance in one direction.
type namespaceAllowance struct {
	direction networkingv1.PolicyType
	// isolating are the team policies of this direction, by host name.
	isolating []string
	// selectors select the pods the allowance applies to.
	selectors []metav1.LabelSelector
	// needed is how many selectors the complement took (at least, when over).
	needed int
	// overLimit: the complement took more than MaxNamespaceAllowances
	// selectors, and the allowance selects every pod.
	overLimit bool
}

// teamPolicyTypes is what a team policy isolates: its policyTypes, or where
// empty what the API server defaults them to (Ingress, and Egress with egress
// rules).
func teamPolicyTypes(p *networkingv1.NetworkPolicy) []networkingv1.PolicyType {
	if len(p.Spec.PolicyTypes) > 0 {
		return p.Spec.PolicyTypes
	}
	types := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if len(p.Spec.Egress) > 0 {
		types = append(types, networkingv1.PolicyTypeEgress)
	}
	return types
}

// namespaceAllowanceFor computes the allowance of one direction from the
// team's policies (vCluster's copies on the host).
func namespaceAllowanceFor(dir networkingv1.PolicyType, teamPolicies []networkingv1.NetworkPolicy) (namespaceAllowance, error) {
	a := namespaceAllowance{direction: dir}
	var selectors []metav1.LabelSelector
	for i := range teamPolicies {
		p := &teamPolicies[i]
		if slices.Contains(teamPolicyTypes(p), dir) {
			a.isolating = append(a.isolating, p.Name)
			selectors = append(selectors, p.Spec.PodSelector)
		}
	}
	res, err := complement.Of(selectors, MaxNamespaceAllowances, maxAllowanceValues)
	if err != nil {
		return a, fmt.Errorf("pod selectors of the team's %s NetworkPolicies %s: %w", strings.ToLower(string(dir)), someNames(a.isolating, 3), err)
	}
	a.needed = res.Needed
	if res.Selectors == nil {
		a.overLimit = true
		a.selectors = []metav1.LabelSelector{{}}
		return a, nil
	}
	a.selectors = res.Selectors
	return a, nil
}

// allowanceName names the n-th allowance policy of a direction.
func allowanceName(dir networkingv1.PolicyType, n int) string {
	return fmt.Sprintf("%s-%s-%d", NamespaceAllowPrefix, strings.ToLower(string(dir)), n)
}

// desiredNamespaceAllowances are the host policies of one direction's
// allowance: each selects the pods of one complement selector and lets them
// reach (egress), or be reached by (ingress), every pod of the namespace.
func desiredNamespaceAllowances(t *gpuvcv1.Team, a namespaceAllowance) []*networkingv1ac.NetworkPolicyApplyConfiguration {
	wholeNamespace := networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector())
	var out []*networkingv1ac.NetworkPolicyApplyConfiguration
	for n, sel := range a.selectors {
		spec := networkingv1ac.NetworkPolicySpec().WithPodSelector(selectorApply(sel)).WithPolicyTypes(a.direction)
		if a.direction == networkingv1.PolicyTypeIngress {
			spec.WithIngress(networkingv1ac.NetworkPolicyIngressRule().WithFrom(wholeNamespace))
		} else {
			spec.WithEgress(networkingv1ac.NetworkPolicyEgressRule().WithTo(wholeNamespace))
		}
		out = append(out, networkingv1ac.NetworkPolicy(allowanceName(a.direction, n), gpuvcv1.HostNamespace(t.Name)).
			WithLabels(teamLabels(t)).WithSpec(spec))
	}
	return out
}

func selectorApply(s metav1.LabelSelector) *metav1ac.LabelSelectorApplyConfiguration {
	out := metav1ac.LabelSelector()
	if len(s.MatchLabels) > 0 {
		out.WithMatchLabels(s.MatchLabels)
	}
	for _, r := range s.MatchExpressions {
		out.WithMatchExpressions(metav1ac.LabelSelectorRequirement().WithKey(r.Key).WithOperator(r.Operator).WithValues(r.Values...))
	}
	return out
}

// isAllowance reports whether a host policy is one of gpuvc's allowance
// policies: its name and labels, and not vCluster's marker (a team's policy
// carries the labels its author wrote, but always vCluster's marker).
func isAllowance(p *networkingv1.NetworkPolicy) bool {
	_, synced := p.Labels[contract.LabelVClusterManagedBy]
	return !synced && p.Labels[LabelManagedBy] == managedBy && strings.HasPrefix(p.Name, NamespaceAllowPrefix+"-")
}

// Reasons of the NetworkPoliciesHonored condition.
const (
	ReasonPoliciesHonored  = "Honored"
	ReasonNoDefaultDeny    = "NoDefaultDeny"
	ReasonTooManySelectors = "TooManySelectors"
)

// honoredCondition says whether the team's policies narrow its traffic, and if
// not, which direction, by how much the limit was passed and what to change.
func honoredCondition(t *gpuvcv1.Team, teamPolicies int, allowances ...namespaceAllowance) (ok bool, reason, msg string) {
	ns := gpuvcv1.HostNamespace(t.Name)
	if !defaultDeny(t) {
		return true, ReasonNoDefaultDeny, fmt.Sprintf("spec.network.defaultDeny is false: gpuvc writes no NetworkPolicy in %s, so the team's policies apply as written and nothing else isolates its pods", ns)
	}
	var over []string
	for _, a := range allowances {
		if a.overLimit {
			over = append(over, fmt.Sprintf("the %d %s policies (%s) need at least %d same-namespace allowances on the host, more than the limit of %d: "+
				"gpuvc keeps %s open to itself for %s, so these policies do not narrow %s among the team's own pods (other teams stay shut out)",
				len(a.isolating), strings.ToLower(string(a.direction)), someNames(a.isolating, 3), a.needed, MaxNamespaceAllowances,
				ns, strings.ToLower(string(a.direction)), strings.ToLower(string(a.direction))))
		}
	}
	if len(over) > 0 {
		return false, ReasonTooManySelectors, strings.Join(over, "; ") +
			"; fix: select pods by fewer independent labels — give the pods a policy selects one shared label (e.g. netpol: db) and select by it — or merge policies"
	}
	if teamPolicies == 0 {
		return true, ReasonPoliciesHonored, "the team has no NetworkPolicies: its pods reach each other"
	}
	var parts []string
	for _, a := range allowances {
		parts = append(parts, fmt.Sprintf("%s: %d policies, %d allowances", strings.ToLower(string(a.direction)), len(a.isolating), len(a.selectors)))
	}
	return true, ReasonPoliciesHonored, fmt.Sprintf("the team's %d NetworkPolicies narrow its pods' traffic as written; gpuvc lets the pods they do not select reach each other (%s)",
		teamPolicies, strings.Join(parts, "; "))
}

// someNames lists up to n names and counts the rest: an event's message is
// limited to 1 kB.
func someNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// eventNote cuts msg to what an event's note may hold (1 kB; the API server
// refuses longer ones); the condition keeps the whole message.
func eventNote(msg string) string {
	const limit = 1024
	if len(msg) <= limit {
		return msg
	}
	cut := limit - len(" …")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + " …"
}
