package health

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

func TestInjectedFollowsTheFile(t *testing.T) {
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 4, Seed: "n"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "inject")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var got []Event
	var invalid []string
	seen := make(chan struct{}, 10)
	w := Injected{Path: path, Inventory: inv, Poll: 5 * time.Millisecond,
		Invalid: func(line string, err error) { mu.Lock(); invalid = append(invalid, line+": "+err.Error()); mu.Unlock() }}
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(ctx, func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock(); seen <- struct{}{} })
	}()
	// The file appears after the watch began; a line arrives in two writes.
	appendTo(t, path, "# comment\n\n1 xid=79\n0 xid=13\n9 xid=79\n2 ecc\nGPU-x lost\n0 reboot\n"+inv.GPUs[3].UUID+" lo")
	<-seen
	<-seen
	appendTo(t, path, "st\n")
	<-seen
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Index: 1, UUID: inv.GPUs[1].UUID, Kind: KindXID, XID: 79},
		{Index: 2, UUID: inv.GPUs[2].UUID, Kind: KindDoubleBitECC},
		{Index: 3, UUID: inv.GPUs[3].UUID, Kind: KindLost},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	wantInvalid := []string{
		`9 xid=79: no GPU "9" on this node (indexes 0-3 or their UUIDs)`,
		`GPU-x lost: no GPU "GPU-x" on this node (indexes 0-3 or their UUIDs)`,
		`0 reboot: "reboot" is not xid=<n>, ecc or lost`,
	}
	if diff := cmp.Diff(wantInvalid, invalid); diff != "" {
		t.Errorf("invalid lines (-want +got):\n%s", diff)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
