package localcp

import (
	"fmt"
	"net"
)

// freePorts reserves n distinct free TCP ports on 127.0.0.1. The listeners are held
// until all are chosen so the same port is never returned twice; another program
// could still take one before the component binds it, which is rare on loopback.
func freePorts(n int) ([]int, error) {
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
