package pki_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/api/pki"
)

func roots(t *testing.T, caPEM []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM), "CA does not parse")
	return pool
}

func TestServingVerifiesForItsHostsOnly(t *testing.T) {
	s, err := pki.NewServing([]string{"127.0.0.1", "gpuvc-webhook.gpuvc-system.svc"}, time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(s.Cert, s.Key)
	require.NoError(t, err, "certificate and key do not match")
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	for _, name := range []string{"127.0.0.1", "gpuvc-webhook.gpuvc-system.svc"} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots(t, s.CA)})
		require.NoError(t, err, "does not verify for %s", name)
	}
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "10.0.0.1", Roots: roots(t, s.CA)})
	require.Error(t, err, "verifies for an address it was not issued for")
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: roots(t, s.CA), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.Error(t, err, "a serving certificate must not authenticate a client")

	dir := t.TempDir()
	require.NoError(t, s.WriteFiles(dir))
	_, err = tls.LoadX509KeyPair(filepath.Join(dir, pki.CertFile), filepath.Join(dir, pki.KeyFile))
	require.NoError(t, err, "written files do not load")
	info, err := os.Stat(filepath.Join(dir, pki.KeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestClientCertificateCarriesIdentityAndClientUsage(t *testing.T) {
	ca, err := pki.NewCA("test-ca", time.Hour)
	require.NoError(t, err)
	kp, err := ca.Sign(pki.Spec{CommonName: "system:node:worker-1", Organizations: []string{"system:nodes"}, Validity: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "system:node:worker-1", kp.Cert.Subject.CommonName)
	require.Equal(t, []string{"system:nodes"}, kp.Cert.Subject.Organization)
	_, err = kp.Cert.Verify(x509.VerifyOptions{Roots: roots(t, ca.CertPEM), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	_, err = kp.Cert.Verify(x509.VerifyOptions{Roots: roots(t, ca.CertPEM)})
	require.Error(t, err, "a client certificate must not serve")

	dir := t.TempDir()
	require.NoError(t, kp.Write(dir, "kubelet"))
	_, err = tls.LoadX509KeyPair(filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key"))
	require.NoError(t, err)
	info, err := os.Stat(filepath.Join(dir, "kubelet.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// vCluster's CA may use an RSA key: Parse must sign with whatever key it holds.
func TestParsedForeignCASignsWithItsIssueTime(t *testing.T) {
	// A fixed issue time, and the CA valid around it (not around the wall
	// clock), so the test means the same on any day.
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vcluster-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(2 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})

	ca, err := pki.Parse(certPEM, keyPEM)
	require.NoError(t, err)
	leaf, err := ca.Sign(pki.Spec{CommonName: "gpuvc-waker", Server: true, Hosts: []string{"10.96.0.7", "team-a.ns.svc", ""}, Validity: time.Hour, Now: now})
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Hour), leaf.Cert.NotAfter)
	require.True(t, leaf.Cert.NotBefore.Before(now))
	require.Equal(t, []string{"team-a.ns.svc"}, leaf.Cert.DNSNames)
	require.Len(t, leaf.Cert.IPAddresses, 1)
	_, err = leaf.Cert.Verify(x509.VerifyOptions{DNSName: "10.96.0.7", Roots: roots(t, certPEM), CurrentTime: now})
	require.NoError(t, err)

	_, err = pki.Parse(certPEM, []byte("not a key"))
	require.Error(t, err)
}

func TestSignRefusesNoValidity(t *testing.T) {
	ca, err := pki.NewCA("test-ca", time.Hour)
	require.NoError(t, err)
	_, err = ca.Sign(pki.Spec{CommonName: "x"})
	require.ErrorContains(t, err, `certificate "x": validity 0s`)
}

func TestSigningKeyPairMatches(t *testing.T) {
	priv, pub, err := pki.SigningKey()
	require.NoError(t, err)
	block, _ := pem.Decode(priv)
	key, err := x509.ParseECPrivateKey(block.Bytes)
	require.NoError(t, err)
	block, _ = pem.Decode(pub)
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	require.NoError(t, err)
	require.True(t, key.PublicKey.Equal(parsed))
}
