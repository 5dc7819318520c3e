package manager

import (
	"crypto/tls"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// webhookConnections counts the TLS connections the pod webhook's server
// accepted: each is a full handshake (the API server's webhook client keeps no
// TLS sessions). Against the pods admitted it says whether the API server
// reuses its connections (HTTP/1.1 keeps up to 25 idle ones per webhook host;
// beyond that, concurrent calls open and close connections of their own).
var webhookConnections = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "gpuvc_webhook_connections_total",
	Help: "TLS connections (handshakes) the pod admission webhook's server accepted.",
})

func init() {
	if err := metrics.Registry.Register(webhookConnections); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		panic(err)
	}
}

// newWebhookServer is the pod webhook's HTTPS server: HTTP/1.1 only, as the
// API server calls a webhook behind a Service anyway (it turns HTTP/2 off for
// them so that calls spread over a webhook's replicas, kubernetes#75791), and
// as kubebuilder's scaffold serves webhooks since HTTP/2's rapid-reset attack
// (CVE-2023-44487). Only for a webhook registered by a loopback URL (a manager
// outside the cluster, the tests and benchmarks) would the API server speak
// HTTP/2; serving HTTP/1.1 there too measures what a cluster runs.
func newWebhookServer(host string, port int, certDir string) webhook.Server {
	return webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir, TLSOpts: []func(*tls.Config){webhookTLS}})
}

func webhookTLS(cfg *tls.Config) {
	cfg.NextProtos = []string{"http/1.1"}
	next := cfg.GetConfigForClient
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		webhookConnections.Inc()
		if next != nil {
			return next(hello)
		}
		return nil, nil // the server's own config
	}
}
