package team

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
				rule += ",pods=" + peer.PodSelector.MatchLabels["k8s-app"]
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
// pods in kube-system on its port; team workloads do not.
func TestControlPlaneReachesMetricsServer(t *testing.T) {
	team := &gpuvcv1.Team{}
	team.Name = "fraud"
	want := []string{
		"anywhere | TCP/443 TCP/6443",
		"ns=kube-system | TCP/10250",
	}
	if diff := cmp.Diff(want, egressTo(desiredControlPlanePolicy(team))); diff != "" {
		t.Errorf("control plane egress (-want +got):\n%s", diff)
	}
	wantTeam := []string{
		"own namespace |",
		"ns=kube-system,pods=kube-dns | UDP/53 TCP/53",
	}
	if diff := cmp.Diff(wantTeam, egressTo(desiredNetworkPolicy(team))); diff != "" {
		t.Errorf("team egress (-want +got):\n%s", diff)
	}
}
