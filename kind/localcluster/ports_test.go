package localcluster

import (
	"net"
	"strconv"
	"testing"
)

// Ports come from below the kernel's ephemeral range and the NodePort range,
// distinct, and free to bind.
func TestFreePortsAvoidEphemeralAndNodePorts(t *testing.T) {
	lo, hi := fixedPortRange()
	if lo < 1024 || hi > 30000 || hi-lo < 1000 {
		t.Fatalf("range %d-%d: want unprivileged ports below 30000, at least 1000 of them", lo, hi)
	}
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p >= hi {
			t.Errorf("port %d outside %d-%d", p, lo, hi)
		}
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}
