package pki

import (
	"os"
	"path/filepath"
	"time"
)

// Serving is a throw-away CA and a serving certificate signed by it, PEM-encoded:
// for webhooks the API server reaches by IP or DNS name (tests, local runs).
type Serving struct {
	CA   []byte // the CA certificate: the webhook configuration's caBundle
	Cert []byte // the serving certificate
	Key  []byte // the serving key
}

// File names WriteFiles uses (controller-runtime's webhook server defaults).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// NewServing creates a CA and a serving certificate for hosts (IPs or DNS names),
// valid for validity from now.
func NewServing(hosts []string, validity time.Duration) (*Serving, error) {
	ca, err := NewCA("gpuvc-webhook-ca", validity)
	if err != nil {
		return nil, err
	}
	leaf, err := ca.Sign(Spec{CommonName: "gpuvc-webhook", Server: true, Hosts: hosts, Validity: validity})
	if err != nil {
		return nil, err
	}
	return &Serving{CA: ca.CertPEM, Cert: leaf.CertPEM, Key: leaf.KeyPEM}, nil
}

// WriteFiles writes tls.crt, tls.key and ca.crt into dir (created 0700; files 0600).
func (s *Serving) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{CertFile: s.Cert, KeyFile: s.Key, CAFile: s.CA} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
