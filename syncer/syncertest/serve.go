package syncertest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/gpuvc/gpuvc/api/pki"
)

// Serving is a webhook server on a loopback port with a throw-away
// certificate, as the API server of a test control plane calls it.
type Serving struct {
	// URL is https://127.0.0.1:<port>, for syncer.ConfigOptions.URL.
	URL string
	// CA signed the server's certificate, for syncer.ConfigOptions.CABundle.
	CA     []byte
	cancel context.CancelFunc
	served chan error
}

// Serve writes a certificate for 127.0.0.1 under dir, serves what register
// registers (the syncer's webhook: (*syncer.Webhook).Register) on a free
// loopback port and returns once the server has started, failing if it has
// not within timeout.
func Serve(ctx context.Context, dir string, timeout time.Duration, register func(webhook.Server)) (*Serving, error) {
	bundle, err := pki.NewServing([]string{"127.0.0.1"}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "webhook-certs")
	if err := bundle.WriteFiles(certDir); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	register(srv)
	srvCtx, cancel := context.WithCancel(context.Background())
	s := &Serving{URL: fmt.Sprintf("https://127.0.0.1:%d", port), CA: bundle.CA, cancel: cancel, served: make(chan error, 1)}
	go func() { s.served <- srv.Start(srvCtx) }()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		select {
		case err := <-s.served:
			s.served <- err // for Stop
			return false, fmt.Errorf("webhook server exited: %w", err)
		default:
		}
		return srv.StartedChecker()(nil) == nil, nil
	})
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("webhook server: %w", err)
	}
	return s, nil
}

// Stop stops the server and waits until it has.
func (s *Serving) Stop() {
	s.cancel()
	<-s.served
}
