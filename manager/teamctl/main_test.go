package teamctl_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// host is a real kube-apiserver with the Team CRD and no manager: each test plays
// the manager by writing the Team's status itself.
var host *localcluster.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{APIOnly: true}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		host = cp
		return nil, charts.InstallCRDs(ctx, cp.Config)
	}))
}

func integration(t *testing.T) (context.Context, *teamctl.Client, client.Client) {
	t.Helper()
	ctx := localcp.Context(t, 2*time.Minute)
	tc, err := teamctl.New(host.Config)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, gpuvcv1.AddToScheme(scheme))
	raw, err := client.New(host.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return ctx, tc, raw
}

// newTeam creates a valid Team and deletes it (finalizers removed) at the end.
func newTeam(t *testing.T, ctx context.Context, tc *teamctl.Client, raw client.Client, name string) *gpuvcv1.Team {
	t.Helper()
	team := &gpuvcv1.Team{Spec: gpuvcv1.TeamSpec{Pool: "a100"}}
	team.Name = name
	require.NoError(t, tc.Create(ctx, team))
	t.Cleanup(func() {
		cur := &gpuvcv1.Team{}
		if raw.Get(context.Background(), client.ObjectKeyFromObject(team), cur) == nil {
			cur.Finalizers = nil
			_ = raw.Update(context.Background(), cur)
			_ = raw.Delete(context.Background(), cur)
		}
	})
	return team
}
