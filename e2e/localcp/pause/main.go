// Command pause is the sandbox process of every pod on the end-to-end node: it holds
// the pod's namespaces open and does nothing else. As PID 1 of a pod that shares its
// process namespace it also adopts orphans, so it reaps them. It exits cleanly on
// SIGTERM or SIGINT.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	// Children that ended before Notify sent no signal we could see.
	reapChildren()
	waitForStop(signals, reapChildren)
}

// waitForStop returns on SIGTERM or SIGINT and calls reap on every SIGCHLD.
func waitForStop(signals <-chan os.Signal, reap func()) {
	for s := range signals {
		if s != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reapChildren collects every child that has exited; several exits can share one
// SIGCHLD.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
