package localcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuvc/gpuvc/api/pki"
)

// PKI holds the cluster's certificate authorities and the file paths of every
// certificate the components need. It is minted in Go (api/pki) so the control
// plane needs no openssl or cfssl.
type PKI struct {
	Dir          string
	CA           *pki.KeyPair
	FrontProxyCA *pki.KeyPair
}

const certValidity = 365 * 24 * time.Hour

// newPKI creates the CAs and every certificate the components use under dir.
// apiServerIPs and apiServerNames become the serving certificate's SANs.
func newPKI(dir string, apiServerIPs []net.IP, apiServerNames []string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := pki.NewCA("gpuvc-localcp-ca", certValidity)
	if err != nil {
		return nil, err
	}
	frontProxyCA, err := pki.NewCA("gpuvc-localcp-front-proxy-ca", certValidity)
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, CA: ca, FrontProxyCA: frontProxyCA}
	if err := ca.Write(dir, "ca"); err != nil {
		return nil, err
	}
	if err := frontProxyCA.Write(dir, "front-proxy-ca"); err != nil {
		return nil, err
	}
	apiServerHosts := append([]string(nil), apiServerNames...)
	for _, ip := range apiServerIPs {
		apiServerHosts = append(apiServerHosts, ip.String())
	}
	leaves := []struct {
		file   string
		signer *pki.KeyPair
		spec   pki.Spec
	}{
		{"apiserver", ca, pki.Spec{CommonName: "kube-apiserver", Server: true, Hosts: apiServerHosts}},
		{"admin", ca, pki.Spec{CommonName: "gpuvc-localcp-admin", Organizations: []string{"system:masters"}}},
		{"kube-controller-manager", ca, pki.Spec{CommonName: "system:kube-controller-manager"}},
		{"kube-scheduler", ca, pki.Spec{CommonName: "system:kube-scheduler"}},
		// kwok writes node and pod status for every fake node; it runs as a cluster admin.
		{"kwok", ca, pki.Spec{CommonName: "kwok", Organizations: []string{"system:masters"}}},
		{"front-proxy-client", frontProxyCA, pki.Spec{CommonName: "front-proxy-client"}},
	}
	for _, l := range leaves {
		l.spec.Validity = certValidity
		kp, err := l.signer.Sign(l.spec)
		if err != nil {
			return nil, fmt.Errorf("signing %s certificate: %w", l.file, err)
		}
		if err := kp.Write(dir, l.file); err != nil {
			return nil, err
		}
	}
	// Service-account tokens are signed with their own key pair.
	saKey, saPub, err := pki.SigningKey()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), saKey, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.pub"), saPub, 0o644); err != nil {
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
func (p *PKI) CACert() []byte { return p.CA.CertPEM }

// ClientCert signs a new client certificate for commonName in the groups orgs with
// the cluster CA, e.g. ("system:node:worker-1", "system:nodes") for a kubelet or
// ("system:kube-proxy") for kube-proxy. It returns the certificate and its key,
// PEM-encoded.
func (p *PKI) ClientCert(commonName string, orgs ...string) (certPEM, keyPEM []byte, err error) {
	kp, err := p.CA.Sign(pki.Spec{CommonName: commonName, Organizations: orgs, Validity: certValidity})
	if err != nil {
		return nil, nil, fmt.Errorf("signing a client certificate for %s: %w", commonName, err)
	}
	return kp.CertPEM, kp.KeyPEM, nil
}

// WriteClientCert signs a client certificate as ClientCert does and stores it as
// <Dir>/<name>.crt and <Dir>/<name>.key.
func (p *PKI) WriteClientCert(name, commonName string, orgs ...string) error {
	kp, err := p.CA.Sign(pki.Spec{CommonName: commonName, Organizations: orgs, Validity: certValidity})
	if err != nil {
		return fmt.Errorf("signing the %s certificate: %w", name, err)
	}
	return kp.Write(p.Dir, name)
}
