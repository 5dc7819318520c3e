package localnode

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestAcquireRelease: a host creates the bridge and the guard rules, and Release
// removes both, restores the sysctls and the state folder.
func TestAcquireRelease(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("integration test: needs root and no -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A first round removes what a crashed earlier run may have left, so the
	// sysctls read next are the machine's own.
	h, err := Acquire(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	before := readSysctls()
	if h, err = Acquire(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if !bridgeExists() {
		t.Error("no bridge after Acquire")
	}
	if chains, err := leftoverChains(ctx); err != nil || len(chains) != 1 {
		t.Errorf("chains after Acquire = %v, %v; want the guard only", chains, err)
	}
	// A second holder waits for the lock until its context ends.
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if _, err := Acquire(short, nil); err == nil {
		t.Error("a second Acquire succeeded while the host was held")
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	if bridgeExists() {
		t.Error("bridge left after Release")
	}
	if chains, err := leftoverChains(ctx); err != nil || len(chains) != 0 {
		t.Errorf("chains after Release = %v, %v", chains, err)
	}
	if after := readSysctls(); after["net/ipv4/ip_forward"] != before["net/ipv4/ip_forward"] {
		t.Errorf("ip_forward %s after Release, %s before", after["net/ipv4/ip_forward"], before["net/ipv4/ip_forward"])
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("state folder %s left: %v", stateDir, err)
	}
}
