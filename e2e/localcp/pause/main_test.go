package main

import (
	"os"
	"syscall"
	"testing"
)

func TestWaitForStopReapsUntilTerminated(t *testing.T) {
	for _, stop := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		signals := make(chan os.Signal, 3)
		signals <- syscall.SIGCHLD
		signals <- syscall.SIGCHLD
		signals <- stop
		reaped := 0
		waitForStop(signals, func() { reaped++ })
		if reaped != 2 {
			t.Errorf("%v: reaped %d times, want once per SIGCHLD (2)", stop, reaped)
		}
	}
}
