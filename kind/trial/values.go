package trial

import (
	"fmt"
	"net"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// Image is a container image as the chart takes it.
type Image struct{ Repository, Tag string }

// ParseImage splits repository:tag. The tag must be explicit and not "latest":
// the image is loaded into the nodes, never pulled, and Kubernetes would pull a
// :latest image for every reservation pod (its default pull policy for them).
func ParseImage(ref string) (Image, error) {
	if strings.Contains(ref, "@") {
		return Image{}, fmt.Errorf("image %q: give repository:tag, not a digest (the image is loaded into the nodes by name)", ref)
	}
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash || colon == len(ref)-1 {
		return Image{}, fmt.Errorf("image %q has no tag: give repository:tag, e.g. ghcr.io/gpuvc/gpuvc:dev", ref)
	}
	img := Image{Repository: ref[:colon], Tag: ref[colon+1:]}
	if img.Tag == "latest" {
		return Image{}, fmt.Errorf("image %q: use a tag other than latest (Kubernetes always pulls :latest, and the trial's image is only loaded into the nodes)", ref)
	}
	return img, nil
}

// String is repository:tag.
func (i Image) String() string { return i.Repository + ":" + i.Tag }

// Values returns the chart values of the trial:
//   - the image loaded into every node (pullPolicy Never), one manager replica on
//     the system node without leader election, and the manager rotating its own
//     webhook certificate (no cert-manager on a fresh kind cluster);
//   - per GPU pool, a simulated agent that also serves its GPUs to the kubelet
//     (agent.simulate, agent.devicePlugin), on every pool including the system one;
//   - ephemeral vClusters (no volume per team) whose control-plane Service is a
//     NodePort, and team kubeconfigs pointing at https://<system node>:<node port>:
//     kind's node addresses route from a Linux host while Service IPs do not, and
//     vCluster puts the address of the node its control plane runs on into its
//     serving certificate when its Service is a NodePort. Control planes run in the
//     system pool, which has one node: systemNodeIP;
//   - vcluster.dra, so a Team with spec.dra installs its vCluster (docs/dra.md).
func Values(img Image, systemNodeIP string, pools []nodepool.Pool) (map[string]any, error) {
	if net.ParseIP(systemNodeIP) == nil {
		return nil, fmt.Errorf("system node address %q is not an IP address", systemNodeIP)
	}
	simulate, err := SimulateSpecs(pools)
	if err != nil {
		return nil, err
	}
	sim := map[string]any{}
	for pool, spec := range simulate {
		sim[pool] = spec
	}
	return map[string]any{
		"image": map[string]any{"repository": img.Repository, "tag": img.Tag, "pullPolicy": "Never"},
		"manager": map[string]any{
			"replicas":            1,
			"leaderElection":      map[string]any{"enabled": false},
			"podDisruptionBudget": map[string]any{"enabled": false},
			"nodeSelector":        map[string]any{contract.LabelPool: SystemPool},
			"teamServerURL":       "https://" + net.JoinHostPort(systemNodeIP, "{{.NodePort}}"),
		},
		"certManager": map[string]any{"enabled": false},
		"vcluster": map[string]any{
			"ephemeral": true,
			// A Team with spec.dra installs its vCluster here as on the local
			// stack (the manager may create vCluster's DeviceClass ClusterRole).
			"dra": true,
			"values": map[string]any{
				"controlPlane": map[string]any{"service": map[string]any{"spec": map[string]any{"type": "NodePort"}}},
			},
		},
		"agent": map[string]any{
			"simulate":     sim,
			"devicePlugin": map[string]any{"enabled": true},
			// The chart's default keeps agents off the system pool; the trial's system
			// node has simulated GPUs too. agent.simulate pins each DaemonSet to its pool.
			"affinity": map[string]any{"nodeAffinity": map[string]any{
				"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
						map[string]any{"key": contract.LabelPool, "operator": "Exists"},
					}}},
				},
			}},
		},
	}, nil
}
