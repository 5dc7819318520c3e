package team

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// egressTo lists each egress rule as "peer namespaces | ports" for comparison.
func egressTo(p *networkingv1ac.NetworkPolicyApplyConfiguration) []string {
	var out []string
	for _, r := range p.Spec.Egress {
		rule := ""
		for _, peer := range r.To {
			switch {
			case peer.NamespaceSelector != nil:
				rule += "ns=" + peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
			case peer.IPBlock != nil:
				rule += "cidr=" + *peer.IPBlock.CIDR
			default:
				rule += "own namespace"
			}
			if peer.PodSelector != nil && len(peer.PodSelector.MatchLabels) > 0 {
				rule += ",pods=" + labels.Set(peer.PodSelector.MatchLabels).String()
			}
			rule += " "
		}
		if len(r.To) == 0 {
			rule += "anywhere "
		}
		rule += "|"
		for _, port := range r.Ports {
			rule += " " + string(*port.Protocol) + "/" + (*port.Port).String()
		}
		out = append(out, rule)
	}
	return out
}

// The control plane reaches metrics-server (vCluster's metrics proxy dials it
// directly, so `kubectl top` through the team's kubeconfig needs it) and only
// pods in kube-system on its port, and the pods of its namespace (the team's
// webhooks); team workloads reach what a cluster gives every pod, whatever
// their team's policies say: the team's API server, its DNS and the host's.
func TestControlPlaneReachesMetricsServer(t *testing.T) {
	team := &gpuvcv1.Team{}
	team.Name = "fraud"
	want := []string{
		"anywhere | TCP/443 TCP/6443",
		"ns=kube-system | TCP/10250",
		"own namespace |",
	}
	if diff := cmp.Diff(want, egressTo(desiredControlPlanePolicy(team))); diff != "" {
		t.Errorf("control plane egress (-want +got):\n%s", diff)
	}
	wantTeam := []string{
		"own namespace,pods=app=vcluster,release=fraud | TCP/8443",
		"own namespace,pods=k8s-app=vcluster-kube-dns,vcluster.loft.sh/managed-by=fraud,vcluster.loft.sh/namespace=kube-system | UDP/1053 TCP/1053",
		"ns=kube-system,pods=k8s-app=kube-dns | UDP/53 TCP/53",
	}
	if diff := cmp.Diff(wantTeam, egressTo(desiredNetworkPolicy(team))); diff != "" {
		t.Errorf("team egress (-want +got):\n%s", diff)
	}
}
