package teamctl_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// TestMissingTeamAPISuggestsInstall removes the CRD, as on a cluster where gpuvc
// was never installed, and puts it back.
func TestMissingTeamAPISuggestsInstall(t *testing.T) {
	ctx, _, _ := integration(t)
	crds := apiextensionsclient.NewForConfigOrDie(host.Config).ApiextensionsV1().CustomResourceDefinitions()
	require.NoError(t, crds.Delete(ctx, "teams.gpuvc.dev", metav1.DeleteOptions{}))
	t.Cleanup(func() { require.NoError(t, charts.InstallCRDs(context.Background(), host.Config)) })
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := crds.Get(ctx, "teams.gpuvc.dev", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}))

	tc, err := teamctl.New(host.Config)
	require.NoError(t, err)
	_, err = tc.List(ctx)
	require.ErrorContains(t, err, "the Team API (teams.gpuvc.dev/v1alpha1) is not installed on the cluster at "+host.Config.Host)
	require.ErrorContains(t, err, "`gpuvc install`")
}

func TestUnreachableClusterIsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	cfg := rest.CopyConfig(host.Config)
	cfg.Host = "https://127.0.0.1:1" // nothing listens on port 1
	tc, err := teamctl.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = tc.List(ctx)
	require.ErrorContains(t, err, "cannot reach the cluster at https://127.0.0.1:1")
	require.ErrorContains(t, err, "`gpuvc dev cluster up`")
}
