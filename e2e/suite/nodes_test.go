package suite

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTeamSeesItsGPUsOnItsNode (issue 25, what a team sees in its own cluster):
// `kubectl describe node` through the team's kubeconfig shows the team's GPUs —
// its quota of 1 whole GPU and 1 MIG 1g.10gb (at most what the host node
// allocates) as capacity and allocatable, its running one-GPU pod under
// "Allocated resources" — and none of the host's inventory: not the node's own
// counts, not the MIG profiles the team has no quota for (on the local real
// node: 2 whole GPUs, 4 1g.10gb, 2 2g.20gb, 2 3g.40gb).
func TestTeamSeesItsGPUsOnItsNode(t *testing.T) {
	ctx := e2e(t)
	needsRunningContainers(t)
	const team = "viewer"
	quota := map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 1}
	createTeam(ctx, t, team, "--pool", realPool, "--gpus", "1", "--mig", "1g.10gb=1")
	kc := teamKubeconfig(t, team)
	vc := teamClient(t, kc)
	_, err := submitVirtualPod(ctx, t, team, workload("train", "sleep 3600").GPUs("1").Obj())
	require.NoError(t, err)
	waitVirtualPod(ctx, t, vc, "train", running)

	host, err := backend.Client().CoreV1().Nodes().Get(ctx, realNodeName, metav1.GetOptions{})
	require.NoError(t, err)
	var shown, hidden []*regexp.Regexp
	for name, q := range host.Status.Allocatable {
		if !strings.HasPrefix(string(name), "nvidia.com/") || q.Value() == 0 {
			continue
		}
		n, ok := quota[string(name)]
		if !ok {
			hidden = append(hidden, regexp.MustCompile(regexp.QuoteMeta(string(name))))
			continue
		}
		if q.Value() > n {
			hidden = append(hidden, line(name, q.Value()))
		}
		shown = append(shown, line(name, min(n, q.Value())))
	}
	require.NotEmpty(t, shown, "the host node %s allocates none of the team's GPU resources: %v", realNodeName, host.Status.Allocatable)
	allocated := regexp.MustCompile(`(?m)^  nvidia\.com/gpu\s+1\s+1$`)

	var out string
	eventually(ctx, t, "the team's GPUs on its node "+realNodeName, func(ctx context.Context) (bool, string) {
		out = kubectl(ctx, t, kc, "describe", "node", realNodeName)
		for _, re := range shown {
			if n := len(re.FindAllString(out, -1)); n != 2 {
				return false, fmt.Sprintf("%s in %d sections, want capacity and allocatable", re, n)
			}
		}
		if !allocated.MatchString(out) {
			return false, "allocated resources lack the pod's nvidia.com/gpu 1"
		}
		return true, ""
	})
	for _, re := range hidden {
		require.NotRegexp(t, re, out, "the team sees the host's inventory")
	}
	t.Log(section(out, "Capacity:", "System Info:"))
	t.Log(section(out, "Allocated resources:", "Events:"))
}

// line matches a resource line of `kubectl describe node`'s capacity or
// allocatable ("  nvidia.com/gpu:  1").
func line(name corev1.ResourceName, n int64) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`(?m)^  %s:\s+%d$`, regexp.QuoteMeta(string(name)), n))
}

// section is the part of text from the line starting with from up to the one
// starting with to.
func section(text, from, to string) string {
	i := strings.Index(text, from)
	if i < 0 {
		return ""
	}
	rest := text[i:]
	if j := strings.Index(rest, "\n"+to); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
