package teamctl_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// A refused address is retried until it listens: the service proxy programs a
// new endpoint a moment after the team turns Ready.
func TestReachableWaitsThroughRefusals(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // refused from now on
	refusals := 0
	listening := make(chan net.Listener, 1)
	go func() {
		time.Sleep(1200 * time.Millisecond) // the proxy catching up, simulated
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
		}
		listening <- l
	}()
	err = teamctl.Reachable(context.Background(), "https://"+addr, 20*time.Second, func(string, error) { refusals++ })
	if l := <-listening; l != nil {
		l.Close()
	}
	if err != nil {
		t.Fatalf("the address listens after 1.2 s but Reachable said: %v", err)
	}
	if refusals != 1 {
		t.Errorf("notYet was called %d times, want once (the first refusal)", refusals)
	}
}

func TestReachableReturnsTheRefusalWhenTimeIsUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	err = teamctl.Reachable(context.Background(), "https://"+addr, time.Second, nil)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want the connection refusal", err)
	}
}

func TestReachableRejectsAServerWithoutHost(t *testing.T) {
	if err := teamctl.Reachable(context.Background(), "not a url", time.Second, nil); err == nil {
		t.Fatal("a server without host was accepted")
	}
}
