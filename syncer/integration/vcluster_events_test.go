package integration

import (
	"slices"
	"testing"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
)

// vCluster's update path re-sends the tenant's view of a pod on every sync:
// for a share pod with a foreign toleration, an UPDATE removing gpuvc's gate
// and re-adding the toleration, which the webhook restores into the stored pod.
// Such no-op rounds must not add events on the host pod (vCluster copies them to
// the tenant's pod); a round that changes the pod, or a refusal, is explained.
func TestVClusterUpdateEventsOnlyOnChange(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	src := newVClusterSource(t, "fraud", gpuvcValues)
	manifest := testobj.Pod("vc-quiet", "default").GPUFraction("0.5").InPool("h100").TolerateEverything().Obj()
	pod, err := createVia(ctx, t, src, manifest)
	if err != nil {
		t.Fatal(err)
	}
	_, st := syncUntilQuiet(ctx, t, src, created(t, src, manifest), pod.Name, 5)
	settled := env.events.on(ctx, t, pod.UID)
	t.Logf("events after creation and vCluster's first syncs: %v", settled)

	noops := func(when string, want []string) {
		t.Helper()
		for i := range 3 {
			var r syncRound
			r, st = syncOnce(ctx, t, src, st, pod.Name)
			if r.sent == nil || r.changed || hasGate(r.sent) {
				t.Fatalf("%s, round %d: want vCluster to send an update removing the gate that the webhook turns into the stored pod; %s", when, i+1, r.describe)
			}
		}
		if got := env.events.on(ctx, t, pod.UID); !slices.Equal(got, want) {
			t.Errorf("%s: 3 no-op vCluster updates changed the events on the host pod from %v to %v", when, want, got)
		}
	}
	noops("after the first syncs", settled)

	// The tenant drops gpuvc's team label from the virtual pod and changes its
	// own: vCluster's update changes the pod, the webhook restores the label
	// and says so.
	edited := st.virtual.DeepCopy()
	delete(edited.Labels, contract.LabelTeam)
	edited.Labels["app"] = "v2"
	st.virtualOld, st.virtual = st.virtual, edited
	_, st = syncUntilQuiet(ctx, t, src, st, pod.Name, 5)
	afterEdit := env.events.on(ctx, t, pod.UID)
	if added := afterEdit[len(settled):]; !slices.Contains(added, syncer.ReasonReservedMetadataRestored) {
		t.Errorf("the tenant's edit added events %v, want %s among them", added, syncer.ReasonReservedMetadataRestored)
	}
	noops("after the tenant's edit", afterEdit)
}
