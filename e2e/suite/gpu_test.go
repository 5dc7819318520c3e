package suite

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// TestGPURequestsLandOnTheRightNodes submits each kind of GPU request a team member
// writes, with no pool settings of their own, and checks where the host pod lands.
func TestGPURequestsLandOnTheRightNodes(t *testing.T) {
	ctx := e2e(t)
	createTeam(ctx, t, "mapping", "--pool", "a100", "--gpus", "4", "--mig", "1g.10gb=4", "--mig", "2g.20gb=2", "--fractions")
	// The pod must land on an a100 node that offers what it was given (on the local
	// backend a100-0 has whole GPUs, a100-mig-0 MIG slices; kind's a100-0 has both).
	cases := map[string]struct {
		pod          *corev1.Pod
		wantResource corev1.ResourceName
		check        func(t *testing.T, p *corev1.Pod)
	}{
		"whole GPU": {pod: testobj.Pod("train", "default").GPUs("1").Obj(), wantResource: "nvidia.com/gpu"},
		"MIG slice": {pod: testobj.Pod("notebook", "default").MIG("1g.10gb", "1").Obj(), wantResource: "nvidia.com/mig-1g.10gb"},
		"MIG profile of another GPU model": {
			pod: testobj.Pod("nvl", "default").MIG("1g.12gb", "1").Obj(), wantResource: "nvidia.com/mig-2g.20gb",
			check: func(t *testing.T, p *corev1.Pod) {
				_, mapped := p.Spec.Containers[0].Resources.Limits["nvidia.com/mig-2g.20gb"]
				require.True(t, mapped, "1g.12gb (H100 NVL) maps to the smallest a100 profile with at least 12 GB: %v", p.Spec.Containers[0].Resources.Limits)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			created, err := submitPod(ctx, t, "mapping", tc.pod)
			require.NoError(t, err)
			// The tenant set no pool: the syncer pinned the pod to the team's pool.
			require.Equal(t, "a100", created.Spec.NodeSelector["gpuvc.dev/pool"])
			eventually(ctx, t, name+" running on an a100 node offering "+string(tc.wantResource), func(ctx context.Context) (bool, string) {
				p, err := backend.Client().CoreV1().Pods(created.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				if tc.check != nil {
					tc.check(t, p)
				}
				if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
					return false, fmt.Sprintf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
				}
				node, err := backend.Client().CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				offered := node.Status.Allocatable[tc.wantResource]
				require.Equal(t, "a100", node.Labels["gpuvc.dev/pool"], "node %s", node.Name)
				require.False(t, offered.IsZero(), "node %s does not offer %s", node.Name, tc.wantResource)
				return true, ""
			})
		})
	}

	t.Run("two halves share one reserved GPU", func(t *testing.T) {
		var pods []*corev1.Pod
		for _, name := range []string{"half-a", "half-b"} {
			created, err := submitPod(ctx, t, "mapping", testobj.Pod(name, "default").Annotation("gpu-fraction", "0.5").Obj())
			require.NoError(t, err)
			// Read after vCluster created it, the host pod may already be served.
			require.True(t, waitsForShare(created) || created.Labels[contract.LabelShareGroup] != "",
				"a fractional pod waits for its share (gate %s) or has been assigned one: gates %v, labels %v",
				contract.GateGPUShare, created.Spec.SchedulingGates, created.Labels)
			q := created.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
			require.True(t, q.IsZero(), "a fractional pod requests no whole GPU itself")
			pods = append(pods, created)
		}
		nodes := map[string]bool{}
		for _, p := range pods {
			eventually(ctx, t, p.Name+" served and running", func(ctx context.Context) (bool, string) {
				got, err := backend.Client().CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				served := got.Status.Phase == corev1.PodRunning && len(got.Spec.SchedulingGates) == 0
				if served {
					nodes[got.Spec.NodeName] = true
				}
				return served, fmt.Sprintf("phase %s, gates %v", got.Status.Phase, got.Spec.SchedulingGates)
			})
		}
		reservations, err := backend.Client().CoreV1().Pods("team-mapping").List(ctx, metav1.ListOptions{LabelSelector: "gpuvc.dev/role=reservation"})
		require.NoError(t, err)
		require.Len(t, reservations.Items, 1, "two halves fit one reserved GPU")
		require.Len(t, nodes, 1, "both halves run on the reservation's node")

		for _, p := range pods {
			require.NoError(t, backend.Client().CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}))
		}
		eventually(ctx, t, "the empty reservation released", func(ctx context.Context) (bool, string) {
			l, err := backend.Client().CoreV1().Pods("team-mapping").List(ctx, metav1.ListOptions{LabelSelector: "gpuvc.dev/role=reservation"})
			if err != nil {
				return false, err.Error()
			}
			return len(l.Items) == 0, fmt.Sprintf("%d reservations", len(l.Items))
		})
	})

	t.Run("over the quota is refused", func(t *testing.T) {
		_, err := submitPod(ctx, t, "mapping", testobj.Pod("greedy", "default").GPUs("5").Obj())
		require.Error(t, err)
		require.Contains(t, err.Error(), "nvidia.com/gpu")
	})
}

// waitsForShare: the pod is held by the share controller's scheduling gate.
func waitsForShare(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == contract.GateGPUShare {
			return true
		}
	}
	return false
}
