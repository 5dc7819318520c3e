package localcluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePorts reserves n distinct free TCP ports on 127.0.0.1 for components
// that bind them a few seconds later. They are drawn below the kernel's
// ephemeral range: a port the kernel hands out for ":0" is also what it gives
// the next outgoing connection's local end, so on a busy machine (tests
// running control planes side by side) a component found its port taken by
// some client's connection ("bind: address already in use"). Below the range
// only a program binding that very port can collide. The listeners are held
// until all are chosen so the same port is never returned twice.
func FreePorts(n int) ([]int, error) {
	lo, hi := fixedPortRange()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("finding %d free ports in %d-%d: only %d after %d tries", n, lo, hi, len(ports), tries)
		}
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // taken: draw another
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	return ports, nil
}

// fixedPortRange is where FreePorts draws from: 10000 up to the NodePort
// range (30000-32767: kube-proxy on a real node sends those to Services) or the
// start of the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range),
// whichever is lower.
func fixedPortRange() (lo, hi int) {
	lo, hi = 10000, 30000
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return lo, hi
	}
	if start, err := strconv.Atoi(fields[0]); err == nil && start < hi && start-lo >= 1000 {
		hi = start
	}
	return lo, hi
}

// nodeAPIPort is the API server's port when pods on a real node reach it: the one
// kubeadm clusters use.
const nodeAPIPort = 6443

// portFree returns port if nothing listens on it on any address.
func portFree(port int) (int, error) {
	l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return 0, fmt.Errorf("the API server of a control plane with a real node listens on port %d, which is taken (another such control plane, or kind?): %w", port, err)
	}
	l.Close()
	return port, nil
}
