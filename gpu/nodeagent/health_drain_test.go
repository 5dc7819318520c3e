package nodeagent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/health"
)

// The team cannot read the host node's GPUHealthy condition, so the event on
// each evicted pod names the GPU and its error, and tells a pod in a Kueue
// queue that its quota is released and a replacement queues; a pod outside
// any queue is not told about queues.
func TestEvictedPodIsToldTheErrorAndItsQueue(t *testing.T) {
	ctx := context.Background()
	queued := gpuPod("queued", "n0", "GPU-a")
	queued.Labels = map[string]string{contract.LabelKueueQueueName: contract.KueueLocalQueueName}
	rec := events.NewFakeRecorder(10)
	h := &Health{Client: healthClient(queued, gpuPod("plain", "n0", "GPU-b")), NodeName: "n0", Policy: HealthCordonDrain, GPUs: 4, Recorder: rec}
	for _, e := range []health.Event{{Index: 0, UUID: "GPU-a", Kind: health.KindXID, XID: 79}, {Index: 1, UUID: "GPU-b", Kind: health.KindDoubleBitECC}} {
		if err := h.Report(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	var evicted []string
	for _, e := range drainEvents(rec) {
		if strings.HasPrefix(e, "Warning "+ReasonEvicted+" ") {
			evicted = append(evicted, e)
		}
	}
	slices.Sort(evicted)
	want := []string{
		"Warning GPUUnhealthyEvicted evicted: GPU 0 (GPU-a): XID 79 (GPU has fallen off the bus) on node n0 failed and is out of service; 0 GPU-seconds lost; " +
			"the GPU quota it held in queue gpuvc is released, and a pod created to replace it waits in that queue for admission",
		"Warning GPUUnhealthyEvicted evicted: GPU 1 (GPU-b): double-bit ECC error on node n0 failed and is out of service; 0 GPU-seconds lost",
	}
	if diff := cmp.Diff(want, evicted); diff != "" {
		t.Errorf("GPUUnhealthyEvicted events (-want +got):\n%s", diff)
	}
}
