package servingcert

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGenerateVerifiesForLoopback(t *testing.T) {
	b, err := Generate([]net.IP{net.ParseIP("127.0.0.1")}, []string{"gpuvc-webhook.gpuvc-system.svc"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b.CA) {
		t.Fatal("CA bundle does not parse")
	}
	for _, name := range []string{"127.0.0.1", "gpuvc-webhook.gpuvc-system.svc"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("does not verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "10.0.0.1", Roots: roots}); err == nil {
		t.Error("verifies for an address it was not issued for")
	}
	dir := t.TempDir()
	if err := b.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)); err != nil {
		t.Errorf("written files do not load: %v", err)
	}
	if info, err := os.Stat(filepath.Join(dir, KeyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, %v", info.Mode(), err)
	}
}
