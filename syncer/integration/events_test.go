package integration

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
)

// emissions counts every event the webhook emits, per object. The API server
// cannot: the events.k8s.io broadcaster folds repeats of an event into one
// Event whose series count it writes only every 30 minutes.
type emissions struct {
	mu       sync.Mutex
	byUID    map[types.UID][]string // reasons, in order
	recorder events.EventRecorder
}

func watchEmissions(b events.EventBroadcaster, r events.EventRecorder) (*emissions, error) {
	e := &emissions{byUID: map[types.UID][]string{}, recorder: r}
	_, err := b.StartEventWatcher(func(obj runtime.Object) {
		ev, ok := obj.(*eventsv1.Event)
		if !ok {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.byUID[ev.Regarding.UID] = append(e.byUID[ev.Regarding.UID], ev.Reason)
	})
	return e, err
}

// on returns the reasons emitted on the object with uid so far. Emission is
// asynchronous: it first emits a marker through the same recorder and waits
// until the marker arrives, so every event emitted before the call is counted.
func (e *emissions) on(ctx context.Context, t *testing.T, uid types.UID) []string {
	t.Helper()
	marker := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "marker", Namespace: "plain", UID: types.UID("marker-" + time.Now().Format(time.RFC3339Nano))}}
	e.recorder.Eventf(marker, nil, corev1.EventTypeNormal, "Marker", "Test", "barrier")
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.byUID[marker.UID]) > 0, nil
	})
	if err != nil {
		t.Fatalf("the event barrier never arrived: %v", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.byUID[uid])
}
