package localnode

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A later Acquire must not wipe a detached node whose daemons still run (a
// trial left running), but may clean up after one whose daemons are gone.
func TestDetachedRunningNamesLiveDaemonsOnly(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	st := &hostState{Node: &nodeState{Name: "system-0", Detached: true, PIDs: map[string]int{
		"kubelet": os.Getpid(), "containerd": gone.Process.Pid,
	}}}
	got := st.detachedRunning()
	if !strings.Contains(got, "system-0 kubelet pid") || strings.Contains(got, "containerd") {
		t.Errorf("detachedRunning() = %q, want the live kubelet only", got)
	}
	st.Node.PIDs = map[string]int{"containerd": gone.Process.Pid}
	if got := st.detachedRunning(); got != "" {
		t.Errorf("no daemon alive: detachedRunning() = %q, want \"\"", got)
	}
	st.Node.Detached, st.Node.PIDs = false, map[string]int{"kubelet": os.Getpid()}
	if got := st.detachedRunning(); got != "" {
		t.Errorf("an attached node's record (a crashed run): detachedRunning() = %q, want \"\"", got)
	}
	if got := (*hostState)(nil).detachedRunning(); got != "" {
		t.Errorf("no record: %q", got)
	}
}
