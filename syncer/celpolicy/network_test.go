package celpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// netpol builds a NetworkPolicy as vCluster writes a team's into the host
// namespace: its pod selector and peers are the test's.
type netpol struct{ networkingv1.NetworkPolicy }

func makeNetpol(name string) *netpol {
	return &netpol{networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: teamNS},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}}
}

func (n *netpol) from(peers ...networkingv1.NetworkPolicyPeer) *netpol {
	n.Spec.Ingress = append(n.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{From: peers})
	return n
}

func (n *netpol) to(peers ...networkingv1.NetworkPolicyPeer) *netpol {
	n.Spec.PolicyTypes = append(n.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
	n.Spec.Egress = append(n.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: peers})
	return n
}

func (n *netpol) ports(p ...int) *netpol {
	var ports []networkingv1.NetworkPolicyPort
	for _, v := range p {
		port := intstr.FromInt(v)
		ports = append(ports, networkingv1.NetworkPolicyPort{Port: &port})
	}
	n.Spec.Ingress = append(n.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{Ports: ports})
	return n
}

func (n *netpol) obj() *networkingv1.NetworkPolicy { return &n.NetworkPolicy }

func pods(labels map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

func ipBlock(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

func namespaces(labels map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

var (
	web       = map[string]string{"app": "web"}
	otherTeam = map[string]string{"kubernetes.io/metadata.name": "team-other"}
)

// TestNetworkPolicyFence: every way a NetworkPolicy that a team's vCluster
// writes into its host namespace could admit another team's traffic or widen
// the host's default deny is refused, naming the field and the limit; policies
// that only narrow are admitted.
func TestNetworkPolicyFence(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	tenant, err := networkPolicyWriter(ctx, vclusterUser(team))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitForNetworkFence(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		policy *networkingv1.NetworkPolicy
		want   string // "" = admitted; else the reason and a phrase of the message
	}{
		"ingress from the team's own pods":      {policy: makeNetpol("own-pods").from(pods(web)).obj()},
		"deny all ingress (no rule)":            {policy: makeNetpol("deny-all").obj()},
		"egress to the team's own pods":         {policy: makeNetpol("egress-own").to(pods(web)).obj()},
		"ingress from all of the team's pods":   {policy: makeNetpol("all-own").from(pods(nil)).obj()},
		"ingress from 0.0.0.0/0":                {policy: makeNetpol("world").from(ipBlock("0.0.0.0/0")).obj(), want: c.ReasonNetworkPolicyIPBlock + ": NetworkPolicy team-fraud/world names ipBlock peers [0.0.0.0/0]"},
		"ingress from the pod CIDR":             {policy: makeNetpol("pod-cidr").from(pods(web), ipBlock("10.244.0.0/16")).obj(), want: c.ReasonNetworkPolicyIPBlock + ": NetworkPolicy team-fraud/pod-cidr names ipBlock peers [10.244.0.0/16]"},
		"ingress from 0.0.0.0/0 except a range": {policy: makeNetpol("except").from(ipBlock("0.0.0.0/0", "10.0.0.0/8")).obj(), want: "[0.0.0.0/0 except 10.0.0.0/8]"},
		"egress to the node's address":          {policy: makeNetpol("node").to(ipBlock("10.244.0.1/32")).obj(), want: c.ReasonNetworkPolicyIPBlock + ": NetworkPolicy team-fraud/node names ipBlock peers [10.244.0.1/32]"},
		"ingress rule without from":             {policy: makeNetpol("everyone").from().obj(), want: c.ReasonNetworkPolicyAllSources + ": NetworkPolicy team-fraud/everyone has an ingress rule without from"},
		"ingress rule with ports only":          {policy: makeNetpol("ports-only").ports(80).obj(), want: c.ReasonNetworkPolicyAllSources + ": NetworkPolicy team-fraud/ports-only has an ingress rule without from"},
		"egress rule without to":                {policy: makeNetpol("anywhere").to().obj(), want: c.ReasonNetworkPolicyAllSources + ": NetworkPolicy team-fraud/anywhere has an egress rule without to"},
		"ingress from another team's namespace": {policy: makeNetpol("other-ns").from(namespaces(otherTeam)).obj(), want: c.ReasonNetworkPolicyNamespace + ": NetworkPolicy team-fraud/other-ns names a namespaceSelector peer"},
		"ingress from every namespace":          {policy: makeNetpol("all-ns").from(namespaces(nil)).obj(), want: c.ReasonNetworkPolicyNamespace},
		"namespace and pod selector together": {policy: makeNetpol("ns-and-pods").from(networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: web},
		}).obj(), want: c.ReasonNetworkPolicyNamespace},
		"egress to another team's namespace": {policy: makeNetpol("egress-ns").to(namespaces(otherTeam)).obj(), want: c.ReasonNetworkPolicyNamespace},
		"a good rule beside a bad one":       {policy: makeNetpol("mixed").from(pods(web)).from(ipBlock("192.168.0.0/16")).obj(), want: "[192.168.0.0/16]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tenant.NetworkingV1().NetworkPolicies(teamNS).Create(ctx, tc.policy, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			checkNetworkFence(t, err, tc.want)
		})
	}

	t.Run("an admitted policy cannot be widened by an update", func(t *testing.T) {
		np := makeNetpol("widened").from(pods(web)).obj()
		created, err := tenant.NetworkingV1().NetworkPolicies(teamNS).Create(ctx, np, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Spec.Ingress[0].From = append(created.Spec.Ingress[0].From, ipBlock("0.0.0.0/0"))
		_, err = tenant.NetworkingV1().NetworkPolicies(teamNS).Update(ctx, created, metav1.UpdateOptions{})
		checkNetworkFence(t, err, c.ReasonNetworkPolicyIPBlock)
	})

	t.Run("gpuvc's own policies (the manager) and cluster admins are not judged", func(t *testing.T) {
		manager, err := networkPolicyWriter(ctx, c.DefaultParamsWriter)
		if err != nil {
			t.Fatal(err)
		}
		egressCIDR := makeNetpol("allowed-egress").to(ipBlock("203.0.113.0/24")).obj()
		for who, cs := range map[string]kubernetes.Interface{"manager": manager, "admin": env.cp.Client} {
			if _, err := cs.NetworkingV1().NetworkPolicies(teamNS).Create(ctx, egressCIDR, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s refused: %v", who, err)
			}
		}
	})
}

// checkNetworkFence fails unless err is nil (want "") or the fence's refusal
// containing want.
func checkNetworkFence(t *testing.T, err error, want string) {
	t.Helper()
	refusal := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: gpuvc: ", c.NetworkPolicyFenceName, c.NetworkPolicyFenceBindingName)
	switch {
	case want == "" && err != nil:
		t.Errorf("refused: %v", err)
	case want != "" && err == nil:
		t.Errorf("admitted; want a refusal with %q", want)
	case want != "" && (!strings.Contains(err.Error(), refusal) || !strings.Contains(err.Error(), want)):
		t.Errorf("refused with %v; want %q after %q", err, want, refusal)
	}
}

// networkPolicyWriter is user with the rights on NetworkPolicies in the team
// namespace that vCluster's chart grants its syncer when it syncs them.
func networkPolicyWriter(ctx context.Context, user string) (kubernetes.Interface, error) {
	return teamWriter(ctx, user, "netpol-", "networking.k8s.io", "networkpolicies")
}

// teamWriter is user with read and write rights on one resource in the team
// namespace (a Role and RoleBinding named prefix+user), as the client it acts with.
func teamWriter(ctx context.Context, user, prefix, apiGroup, resource string) (kubernetes.Interface, error) {
	name := prefix + strings.NewReplacer(":", "-").Replace(user)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{apiGroup}, Resources: []string{resource},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"},
	}}}
	if _, err := env.cp.Client.RbacV1().Roles(teamNS).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := env.cp.Client.RbacV1().RoleBindings(teamNS).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	return impersonate(user)
}

// waitForNetworkFence polls until the API server enforces the NetworkPolicy
// fence (policies load asynchronously) and the writer's RBAC applies.
func waitForNetworkFence(ctx context.Context, tenant kubernetes.Interface) error {
	probe := makeNetpol("probe").from(ipBlock("0.0.0.0/0")).obj()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = tenant.NetworkingV1().NetworkPolicies(teamNS).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), c.NetworkPolicyFenceName), nil
	})
	if err != nil {
		return fmt.Errorf("the NetworkPolicy fence never took effect: %w (last: %v)", err, last)
	}
	return nil
}
