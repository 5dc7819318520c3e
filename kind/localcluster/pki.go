package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its private key, both kept in memory and on disk.
type keyPair struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
}

// certSpec describes a certificate signed by a CA.
type certSpec struct {
	commonName string
	orgs       []string
	server     bool // serving certificate (server auth) instead of a client one
	ips        []net.IP
	dnsNames   []string
}

// PKI holds the cluster's certificate authorities and the file paths of every
// certificate the components need. It is generated in Go so the control plane
// needs no openssl or cfssl.
type PKI struct {
	Dir          string
	CA           *keyPair
	FrontProxyCA *keyPair
}

const certValidity = 365 * 24 * time.Hour

func newCA(commonName string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return pairFromDER(der, key)
}

func (ca *keyPair) sign(spec certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if spec.server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  spec.ips,
		DNSNames:     spec.dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	return pairFromDER(der, key)
}

func pairFromDER(der []byte, key *ecdsa.PrivateKey) (*keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// write stores the pair as <dir>/<name>.crt and <dir>/<name>.key.
func (kp *keyPair) write(dir, name string) error {
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), kp.certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".key"), kp.keyPEM, 0o600)
}

// newPKI creates the CAs and every certificate the components use under dir.
// apiServerIPs and apiServerNames become the serving certificate's SANs.
func newPKI(dir string, apiServerIPs []net.IP, apiServerNames []string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := newCA("gpuvc-localcp-ca")
	if err != nil {
		return nil, err
	}
	frontProxyCA, err := newCA("gpuvc-localcp-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, CA: ca, FrontProxyCA: frontProxyCA}
	if err := ca.write(dir, "ca"); err != nil {
		return nil, err
	}
	if err := frontProxyCA.write(dir, "front-proxy-ca"); err != nil {
		return nil, err
	}
	leaves := []struct {
		file   string
		signer *keyPair
		spec   certSpec
	}{
		{"apiserver", ca, certSpec{commonName: "kube-apiserver", server: true, ips: apiServerIPs, dnsNames: apiServerNames}},
		{"admin", ca, certSpec{commonName: "gpuvc-localcp-admin", orgs: []string{"system:masters"}}},
		{"kube-controller-manager", ca, certSpec{commonName: "system:kube-controller-manager"}},
		{"kube-scheduler", ca, certSpec{commonName: "system:kube-scheduler"}},
		// kwok writes node and pod status for every fake node; it runs as a cluster admin.
		{"kwok", ca, certSpec{commonName: "kwok", orgs: []string{"system:masters"}}},
		{"front-proxy-client", frontProxyCA, certSpec{commonName: "front-proxy-client"}},
	}
	for _, l := range leaves {
		kp, err := l.signer.sign(l.spec)
		if err != nil {
			return nil, fmt.Errorf("signing %s certificate: %w", l.file, err)
		}
		if err := kp.write(dir, l.file); err != nil {
			return nil, err
		}
	}
	// Service-account tokens are signed with their own key pair.
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// Path returns the path of a file in the PKI folder, e.g. Path("ca.crt").
func (p *PKI) Path(name string) string { return filepath.Join(p.Dir, name) }

// kubeletClientCert is the file name (and common name) of the certificate the API
// server presents to kubelets when a real worker node is served.
const kubeletClientCert = "apiserver-kubelet-client"

// CACert returns the cluster CA certificate, PEM-encoded; kubelets trust client
// certificates it signed.
func (p *PKI) CACert() []byte { return p.CA.certPEM }

// ClientCert signs a new client certificate for commonName in the groups orgs with
// the cluster CA, e.g. ("system:node:worker-1", "system:nodes") for a kubelet or
// ("system:kube-proxy") for kube-proxy. It returns the certificate and its key,
// PEM-encoded.
func (p *PKI) ClientCert(commonName string, orgs ...string) (certPEM, keyPEM []byte, err error) {
	kp, err := p.CA.sign(certSpec{commonName: commonName, orgs: orgs})
	if err != nil {
		return nil, nil, fmt.Errorf("signing a client certificate for %s: %w", commonName, err)
	}
	return kp.certPEM, kp.keyPEM, nil
}

// WriteClientCert signs a client certificate as ClientCert does and stores it as
// <Dir>/<name>.crt and <Dir>/<name>.key.
func (p *PKI) WriteClientCert(name, commonName string, orgs ...string) error {
	kp, err := p.CA.sign(certSpec{commonName: commonName, orgs: orgs})
	if err != nil {
		return fmt.Errorf("signing the %s certificate: %w", name, err)
	}
	return kp.write(p.Dir, name)
}
