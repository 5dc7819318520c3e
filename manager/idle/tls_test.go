package idle_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/api/pki"
)

// testCA is a CA standing in for vCluster's: it signs the stand-in control
// plane's serving certificate and, through the Secret <release>-certs, the waker's.
type testCA struct{ *pki.KeyPair }

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca, err := pki.NewCA("vcluster-ca", time.Hour)
	require.NoError(t, err)
	return &testCA{ca}
}

// controlPlane is a TLS server signed by ca for 127.0.0.1 answering /version as
// an API server does: what the waker's client reaches after the wake.
func (ca *testCA) controlPlane(t *testing.T) *httptest.Server {
	t.Helper()
	kp, err := ca.Sign(pki.Spec{CommonName: "vcluster", Server: true, Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	require.NoError(t, err)
	pair, err := kp.TLS()
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3-standin"}`))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}
