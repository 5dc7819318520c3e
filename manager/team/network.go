package team

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Ports of the vCluster control plane: it serves the team's API on 8443 and talks to
// the host API server on 443 or 6443, and to the host's metrics-server on
// metricsServerPort.
const (
	vclusterAPIPort = 8443
	// metricsServerPort is metrics-server's secure port in its upstream
	// manifests and Helm chart (since v0.6). vCluster's metrics proxy (on for
	// every team: `kubectl top`) dials metrics-server.kube-system directly, not
	// through the API server, so the connection is the control plane pod's own
	// and NetworkPolicy sees the pod's port after the Service's translation.
	metricsServerPort = 10250
	// vclusterDNSPort is where vCluster's CoreDNS (a pod of the team's
	// kube-system, synced to the host) listens; its Service maps 53 to it, and
	// NetworkPolicy sees the pod's port.
	vclusterDNSPort = 1053
)

var hostAPIPorts = []int32{443, 6443}

func defaultDeny(t *gpuvcv1.Team) bool {
	n := t.Spec.Network
	return n == nil || n.DefaultDeny == nil || *n.DefaultDeny
}

// desiredNetworkPolicy selects every pod of the namespace and denies what no
// policy allows. For every pod, whatever the team's own policies say, it allows
// what a cluster gives its pods: the team's API server both ways (in-cluster
// clients call it; it calls the team's webhooks and aggregated APIs), the
// team's DNS (vCluster's CoreDNS and the host's cluster DNS it forwards to),
// and the Team's egress CIDRs. A team cannot write these itself (vCluster
// pins every peer to the team's synced pods, and the fence refuses ipBlock),
// so a team policy that took them away could not give them back. Pods of the
// namespace reaching each other is not here: desiredNamespaceAllowances opens
// it to the pods no team policy selects, so a team's policy narrows it. Nil
// when the Team turns default deny off.
func desiredNetworkPolicy(t *gpuvcv1.Team) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if !defaultDeny(t) {
		return nil
	}
	controlPlane := networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(controlPlaneSelector(t)))
	egress := []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{
		networkingv1ac.NetworkPolicyEgressRule().WithTo(controlPlane).WithPorts(port(corev1.ProtocolTCP, vclusterAPIPort)),
		networkingv1ac.NetworkPolicyEgressRule().
			WithTo(networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(vclusterDNSSelector(t)))).
			WithPorts(port(corev1.ProtocolUDP, vclusterDNSPort), port(corev1.ProtocolTCP, vclusterDNSPort)),
		networkingv1ac.NetworkPolicyEgressRule().
			WithTo(networkingv1ac.NetworkPolicyPeer().
				WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"kubernetes.io/metadata.name": "kube-system"})).
				WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"k8s-app": "kube-dns"}))).
			WithPorts(port(corev1.ProtocolUDP, 53), port(corev1.ProtocolTCP, 53)),
	}
	if n := t.Spec.Network; n != nil && len(n.AllowedEgressCIDRs) > 0 {
		rule := networkingv1ac.NetworkPolicyEgressRule()
		for _, cidr := range n.AllowedEgressCIDRs {
			rule.WithTo(networkingv1ac.NetworkPolicyPeer().WithIPBlock(networkingv1ac.IPBlock().WithCIDR(cidr)))
		}
		egress = append(egress, rule)
	}
	return networkingv1ac.NetworkPolicy(NetworkPolicyName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector()).
			WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
			WithIngress(networkingv1ac.NetworkPolicyIngressRule().WithFrom(controlPlane)).
			WithEgress(egress...))
}

// desiredDNSPolicy keeps the team's DNS answering every pod of the namespace,
// also where a team policy selects vCluster's CoreDNS: the other half of the
// DNS egress every pod has (desiredNetworkPolicy).
func desiredDNSPolicy(t *gpuvcv1.Team) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if !defaultDeny(t) {
		return nil
	}
	return networkingv1ac.NetworkPolicy(DNSPolicyName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(vclusterDNSSelector(t))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(networkingv1ac.NetworkPolicyIngressRule().
				WithFrom(networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector())).
				WithPorts(port(corev1.ProtocolUDP, vclusterDNSPort), port(corev1.ProtocolTCP, vclusterDNSPort))))
}

// desiredControlPlanePolicy opens what the vCluster control plane pod needs beyond
// the default deny: its API port to the team, the host API server ports,
// metrics-server's port on pods in kube-system (vCluster's metrics proxy), and
// the pods of its namespace (the team's webhooks, aggregated APIs and Services
// its API server calls), whatever team policies select.
func desiredControlPlanePolicy(t *gpuvcv1.Team) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if !defaultDeny(t) {
		return nil
	}
	return networkingv1ac.NetworkPolicy(ControlPlanePolicyName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(controlPlaneSelector(t))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
			WithIngress(networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(corev1.ProtocolTCP, vclusterAPIPort))).
			WithEgress(hostAPIEgress(), metricsServerEgress(),
				networkingv1ac.NetworkPolicyEgressRule().WithTo(networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector()))))
}

// metricsServerEgress allows connections to pods in kube-system on
// metrics-server's port: where metrics-server's manifests and chart put it.
// Nodes are no pods of kube-system, so this opens no kubelet (which serves on
// the same port number).
func metricsServerEgress() *networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	return networkingv1ac.NetworkPolicyEgressRule().
		WithTo(networkingv1ac.NetworkPolicyPeer().
			WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"kubernetes.io/metadata.name": "kube-system"}))).
		WithPorts(port(corev1.ProtocolTCP, metricsServerPort))
}

// desiredReservationPolicy lets reservation pods (`gpuvc reserve`) reach the host
// API server, where they record the GPU they hold on themselves; the default deny
// would refuse them. Only gpuvc's share controller can create pods with the
// reservation role (the webhook strips gpuvc.dev/ labels tenants write), so this
// opens nothing to team workloads.
func desiredReservationPolicy(t *gpuvcv1.Team) *networkingv1ac.NetworkPolicyApplyConfiguration {
	if !defaultDeny(t) {
		return nil
	}
	return networkingv1ac.NetworkPolicy(ReservationPolicyName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{contract.LabelRole: contract.RoleReservation})).
			WithPolicyTypes(networkingv1.PolicyTypeEgress).
			WithEgress(hostAPIEgress()))
}

// hostAPIEgress allows connections to the host API server's ports.
func hostAPIEgress() *networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	rule := networkingv1ac.NetworkPolicyEgressRule()
	for _, p := range hostAPIPorts {
		rule.WithPorts(port(corev1.ProtocolTCP, p))
	}
	return rule
}

// controlPlaneSelector matches the vCluster chart's control-plane pod. A pod a
// team writes cannot carry it: vCluster rewrites the label release on the pods
// it syncs.
func controlPlaneSelector(t *gpuvcv1.Team) map[string]string {
	return map[string]string{"app": "vcluster", "release": gpuvcv1.ReleaseName(t)}
}

// vclusterDNSSelector matches vCluster's CoreDNS pods of the team: the labels
// its chart's own DNS policy selects them by, and the virtual namespace they run
// in.
func vclusterDNSSelector(t *gpuvcv1.Team) map[string]string {
	return map[string]string{
		"k8s-app":                       "vcluster-kube-dns",
		contract.LabelVClusterManagedBy: gpuvcv1.ReleaseName(t),
		contract.KeyVClusterNamespace:   "kube-system",
	}
}

func port(proto corev1.Protocol, p int32) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
	return networkingv1ac.NetworkPolicyPort().WithProtocol(proto).WithPort(intstr.FromInt32(p))
}
