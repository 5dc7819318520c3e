package manager

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuvc/gpuvc/api/pki"
)

// The webhook's TLS settings: a client offering HTTP/2 first, as the API
// server does for a webhook registered by a loopback URL, gets HTTP/1.1, and
// every connection is counted once.
func TestWebhookTLSServesHTTP1AndCountsConnections(t *testing.T) {
	bundle, err := pki.NewServing([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(bundle.Cert, bundle.Key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}, Certificates: []tls.Certificate{cert}} // controller-runtime's default
	webhookTLS(cfg)
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle.CA)
	before := testutil.ToFloat64(webhookConnections)
	const conns = 3
	for range conns {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", l.Addr().String(),
			&tls.Config{RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
			t.Errorf("negotiated protocol %q, want http/1.1 (HTTP/2 off)", got)
		}
		c.Close()
	}
	if got := testutil.ToFloat64(webhookConnections) - before; got != conns {
		t.Errorf("gpuvc_webhook_connections_total grew by %v over %d connections, want %d", got, conns, conns)
	}
}
