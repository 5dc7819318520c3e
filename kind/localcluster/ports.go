package localcluster

import (
	"fmt"
	"net"
)

// FreePorts reserves n distinct free TCP ports on 127.0.0.1. The listeners are held
// until all are chosen so the same port is never returned twice; another program
// could still take one before the component binds it, which is rare on loopback.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
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
