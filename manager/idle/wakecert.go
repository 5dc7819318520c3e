package idle

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/pki"
)

// wakeCertificate is a short-lived serving certificate the team's clients trust:
// signed by the CA of the team's kubeconfig (one of vCluster's CAs, kept in the
// Secret <release>-certs), for the kubeconfig's server address and the Service's
// ClusterIP. With it the waker completes the client's TLS handshake at once
// (client-go gives a handshake 10 s, a cold control plane needs longer), holds
// the request until the control plane is ready and answers it with 503 and
// Retry-After, which client-go retries, whatever the verb.
func (s *Sleeper) wakeCertificate(ctx context.Context, v vcluster) (*tls.Certificate, error) {
	kc := &corev1.Secret{}
	if err := s.reader.Get(ctx, v.key(contract.KubeconfigSecretName), kc); err != nil {
		return nil, fmt.Errorf("reading the team's kubeconfig %s/%s: %w", v.namespace, contract.KubeconfigSecretName, err)
	}
	cfg, err := clientcmd.Load(kc.Data[contract.KubeconfigSecretKey])
	if err != nil {
		return nil, fmt.Errorf("team kubeconfig %s/%s: %w", v.namespace, contract.KubeconfigSecretName, err)
	}
	var caPEM []byte
	var hosts []string
	for _, c := range cfg.Clusters {
		caPEM = c.CertificateAuthorityData
		if u, err := url.Parse(c.Server); err == nil {
			hosts = append(hosts, u.Hostname())
		}
	}
	svc := &corev1.Service{}
	if err := s.reader.Get(ctx, v.key(v.release), svc); err == nil {
		hosts = append(hosts, svc.Spec.ClusterIPs...)
		hosts = append(hosts, v.release, v.release+"."+v.namespace, v.release+"."+v.namespace+".svc")
	}
	certs := &corev1.Secret{}
	if err := s.reader.Get(ctx, v.key(v.release+"-certs"), certs); err != nil {
		return nil, fmt.Errorf("reading vCluster's certificates %s/%s-certs: %w", v.namespace, v.release, err)
	}
	for _, pair := range [][2]string{{"ca.crt", "ca.key"}, {"server-ca.crt", "server-ca.key"}} {
		if len(caPEM) == 0 || !bytes.Equal(bytes.TrimSpace(certs.Data[pair[0]]), bytes.TrimSpace(caPEM)) {
			continue
		}
		return signServing(certs.Data[pair[0]], certs.Data[pair[1]], hosts, time.Now()) // clients check it against the real clock
	}
	return nil, fmt.Errorf("none of the CAs in %s/%s-certs signs the team kubeconfig's server certificate", v.namespace, v.release)
}

// signServing issues a one-hour serving certificate for hosts, signed by the
// team's vCluster CA.
func signServing(caCertPEM, caKeyPEM []byte, hosts []string, now time.Time) (*tls.Certificate, error) {
	ca, err := pki.Parse(caCertPEM, caKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("vCluster CA: %w", err)
	}
	kp, err := ca.Sign(pki.Spec{CommonName: "gpuvc-waker", Server: true, Hosts: hosts, Validity: time.Hour, Now: now})
	if err != nil {
		return nil, err
	}
	pair, err := kp.TLS()
	return &pair, err
}
