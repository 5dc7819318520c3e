package idle_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// TestARequestWrittenMeanwhileStays: a request written after the one the
// policy handles was read (a `gpuvc team wake` right after a sleep was handled)
// is not removed with it; the next look acts on it and removes it.
func TestARequestWrittenMeanwhileStays(t *testing.T) {
	ctx := integration(t)
	const team = "requests"
	free, err := localcluster.FreePorts(1)
	require.NoError(t, err)
	standInVCluster(ctx, t, team, 30*time.Minute, newTestCA(t), "https://127.0.0.1:1")
	request := func(cl client.Client, what string) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{contract.AnnotationIdleRequest: what}}})
		require.NoError(t, cl.Patch(ctx, &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: team}}, client.RawPatch(types.MergePatchType, patch)))
	}
	request(c, "nap") // not a request it knows: an event, then removed

	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	meanwhile := true
	s := idle.New(interceptor.NewClient(wc, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*gpuvcv1.Team); ok && meanwhile {
				meanwhile = false
				request(cl, contract.IdleRequestWake) // lands before the policy's removal of "nap"
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
	}), c, nil, idle.Options{WakerIP: "192.0.2.10", ListenHost: "127.0.0.1",
		Ports: idle.PortRange{First: int32(free[0]), Last: int32(free[0]) + 99}})

	annotation := func() (string, bool) {
		tm := &gpuvcv1.Team{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: team}, tm))
		v, ok := tm.Annotations[contract.AnnotationIdleRequest]
		return v, ok
	}
	s.Tick(ctx)
	require.False(t, meanwhile, "the policy did not remove the request it handled")
	got, ok := annotation()
	require.True(t, ok && got == contract.IdleRequestWake, "the newer request was removed with the one handled (now %q)", got)
	s.Tick(ctx)
	_, ok = annotation()
	require.False(t, ok, "the newer request was not handled")
}
