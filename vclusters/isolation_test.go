package vclusters_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/vclusters"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// TestDefaultRendersNoClusterWideAccess: with real node sync off (the default), the
// chart renders no ClusterRole, so a team's vCluster control plane cannot read
// other teams' pods; with it on, the ClusterRole appears (the documented cost).
func TestDefaultRendersNoClusterWideAccess(t *testing.T) {
	if testing.Short() {
		t.Skip("renders the real vCluster chart from the module cache")
	}
	ctx := context.Background()
	chart, err := vclusterstest.ChartSource(ctx)
	if err != nil {
		t.Fatal(err)
	}
	render := func(real bool) string {
		out, err := vclusters.Render(ctx, vclusters.Spec{
			Name: "fraud", Namespace: "team-fraud", Pool: "a100",
			KubeconfigServer: "https://fraud.vc.example.com", Chart: chart, SyncRealNodes: real,
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := render(false); strings.Contains(out, "kind: ClusterRole") {
		t.Errorf("default values render a ClusterRole:\n%s", clusterRoles(out))
	}
	if out := render(true); !strings.Contains(out, "kind: ClusterRole") {
		t.Error("real node sync renders no ClusterRole; the documented trade-off changed: update docs/vclusters.md")
	}
}

func clusterRoles(manifests string) string {
	var b strings.Builder
	for _, doc := range strings.Split(manifests, "\n---") {
		if strings.Contains(doc, "kind: ClusterRole") {
			b.WriteString(doc)
		}
	}
	return b.String()
}
