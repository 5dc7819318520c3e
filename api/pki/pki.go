// Package pki mints every certificate gpuvc makes itself: the local control
// plane's CAs and component certificates, throw-away webhook serving
// certificates for locally run webhooks, and the waker's short-lived serving
// certificate signed by a team's vCluster CA. One place decides key type
// (ECDSA P-256), serial numbers, clock-skew margin and PEM encoding, so no
// component carries its own X.509 code. In a cluster, the manager's webhook
// certificate is rotated by cert-controller instead.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// skew is how far before "now" a certificate becomes valid, so a peer whose
// clock runs a little behind accepts it at once.
const skew = time.Minute

// KeyPair is a certificate with its private key, parsed and PEM-encoded.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Spec describes a certificate to sign.
type Spec struct {
	CommonName    string
	Organizations []string
	// Server makes a serving certificate (server auth); otherwise a client one.
	Server bool
	// Hosts are the serving certificate's names: IP addresses or DNS names.
	Hosts []string
	// Validity from Now; required.
	Validity time.Duration
	// Now is the issue time; zero means time.Now().
	Now time.Time
}

// NewCA creates a self-signed certificate authority.
func NewCA(commonName string, validity time.Duration) (*KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-skew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %q: %w", commonName, err)
	}
	return fromDER(der, key)
}

// Parse reads a PEM certificate and its key (EC, RSA or PKCS#8), e.g. a CA made
// elsewhere (vCluster's) to sign with.
func Parse(certPEM, keyPEM []byte) (*KeyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("the private key cannot sign")
	}
	return &KeyPair{Cert: cert, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// Sign issues a certificate for s signed by ca.
func (ca *KeyPair) Sign(s Spec) (*KeyPair, error) {
	if s.Validity <= 0 {
		return nil, fmt.Errorf("certificate %q: validity %v, want a positive duration", s.CommonName, s.Validity)
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	usage := x509.ExtKeyUsageClientAuth
	if s.Server {
		usage = x509.ExtKeyUsageServerAuth
	}
	ips, names := SplitHosts(s.Hosts)
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: s.CommonName, Organization: s.Organizations},
		NotBefore:    now.Add(-skew),
		NotAfter:     now.Add(s.Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing %q: %w", s.CommonName, err)
	}
	return fromDER(der, key)
}

// TLS returns the pair for a tls.Config.
func (kp *KeyPair) TLS() (tls.Certificate, error) { return tls.X509KeyPair(kp.CertPEM, kp.KeyPEM) }

// Write stores the pair as <dir>/<name>.crt (0644) and <dir>/<name>.key (0600).
func (kp *KeyPair) Write(dir, name string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), kp.CertPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".key"), kp.KeyPEM, 0o600)
}

// SplitHosts sorts names into IP addresses and DNS names; empty ones are dropped.
func SplitHosts(hosts []string) ([]net.IP, []string) {
	var ips []net.IP
	var names []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else if h != "" {
			names = append(names, h)
		}
	}
	return ips, names
}

// SigningKey creates a key pair for signing tokens (the API server's
// service-account issuer), PEM-encoded: private (EC) and public (PKIX).
func SigningKey() (privatePEM, publicPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	privDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: privDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func fromDER(der []byte, key *ecdsa.PrivateKey) (*KeyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// serial is a random 127-bit serial number, as RFC 5280 asks (positive, ≤ 20 bytes).
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n.Add(n, big.NewInt(1))
}
