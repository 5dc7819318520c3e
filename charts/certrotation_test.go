package charts

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager"
)

// managerChildEnv makes the test binary run one manager instead of the tests:
// TestInstall already ran a manager in this process, and controller-runtime
// allows each controller name once per process. A separate process is also what
// a replica is.
const managerChildEnv = "GPUVC_TEST_CHARTS_MANAGER"

// managerChild is how a child process authenticates and what it serves.
type managerChild struct {
	Host        string `json:"host"`
	CAData      []byte `json:"caData,omitempty"`
	CAFile      string `json:"caFile,omitempty"`
	Token       string `json:"token"`
	CertDir     string `json:"certDir"`
	HealthPort  int    `json:"healthPort"`
	WebhookPort int    `json:"webhookPort"`
}

// runManagerChild runs manager.New as the chart configures it without
// cert-manager (leader election and --webhook-cert-secret in the release
// namespace), until SIGTERM.
func runManagerChild(spec string) int {
	var c managerChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	ctx := ctrl.SetupSignalHandler()
	cfg := &rest.Config{Host: c.Host, BearerToken: c.Token, QPS: 100, Burst: 200,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData, CAFile: c.CAFile}}
	mgr, err := manager.New(ctx, cfg, manager.Options{
		MetricsAddr: "0", HealthAddr: "127.0.0.1:" + strconv.Itoa(c.HealthPort),
		LeaderElection: true, LeaderElectionNS: testNamespace,
		WebhookHost: "127.0.0.1", WebhookPort: c.WebhookPort, WebhookCertDir: c.CertDir,
		WebhookCertSecret: types.NamespacedName{Namespace: testNamespace, Name: WebhookSecretName},
		SystemPool:        "system",
		ReserveImage:      "ghcr.io/gpuvc/gpuvc:test",
	})
	if err == nil {
		err = mgr.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		return 1
	}
	return 0
}

// checkSelfManagedCerts runs the manager as its ServiceAccount against the
// chart's empty Secret and webhook configurations (certManager.enabled=false):
// within the chart's RBAC it writes a CA and a certificate for the webhook
// Service into the Secret, the CA into both caBundles and the pair into its cert
// folder, then turns ready and serves that certificate to a client that trusts
// only the caBundle and checks the Service's name (as the API server does). It
// returns the Secret as written. (The earlier manager's lease is normally still
// held when this one turns ready, which the log says: the rotation does not wait
// for leadership; manager/certrotation_test.go proves that with two replicas.)
func checkSelfManagedCerts(ctx context.Context, t *testing.T) *corev1.Secret {
	t.Helper()
	sa := saConfig(ctx, t, ManagerServiceAccount, nil)
	dir := t.TempDir()
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	child := managerChild{
		Host: sa.Host, CAData: sa.CAData, CAFile: sa.CAFile, Token: sa.BearerToken,
		CertDir: filepath.Join(dir, "serving-certs"), HealthPort: ports[0], WebhookPort: ports[1],
	}
	spec, err := json.Marshal(child)
	if err != nil {
		t.Fatal(err)
	}
	holder := func() string {
		l, err := host.Client.CoordinationV1().Leases(testNamespace).Get(ctx, LeaderElectionID, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	leaderBefore := holder()
	logPath := filepath.Join(dir, "manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), managerChildEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("manager log (end):\n%s", b)
		}
	}()

	readyz := fmt.Sprintf("http://127.0.0.1:%d/readyz", child.HealthPort)
	poll.Until(ctx, t, 2*time.Minute, "the self-managed manager ready", func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			stopped = true
			return false, fmt.Errorf("manager exited: %v", err)
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	t.Logf("self-managed certificate in place, manager ready %v after start (leader: the earlier manager still: %v)",
		time.Since(start).Round(time.Millisecond), leaderBefore != "" && holder() == leaderBefore)

	sec, err := host.Client.CoreV1().Secrets(testNamespace).Get(ctx, WebhookSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := WebhookServiceName + "." + testNamespace + ".svc"
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		t.Fatalf("Secret has no CA (keys: %d)", len(sec.Data))
	}
	leaf := parseCert(t, sec.Data["tls.crt"])
	for _, name := range []string{svc, svc + ".cluster.local"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	api := host.Client.AdmissionregistrationV1()
	m, err := api.MutatingWebhookConfigurations().Get(ctx, WebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := api.ValidatingWebhookConfigurations().Get(ctx, WebhookConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, sec.Data["ca.crt"]) || !bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, sec.Data["ca.crt"]) {
		t.Error("the caBundles are not the Secret's CA")
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if b, err := os.ReadFile(filepath.Join(child.CertDir, f)); err != nil || !bytes.Equal(b, sec.Data[f]) {
			t.Errorf("%s in the cert folder is not the Secret's (%v)", f, err)
		}
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: svc, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(child.WebhookPort)))
	if err != nil {
		t.Errorf("TLS to the webhook as %s with the caBundle: %v", svc, err)
	} else {
		if !conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Equal(leaf) {
			t.Error("the webhook serves a certificate other than the Secret's")
		}
		conn.Close()
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("manager: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("manager did not stop within 30s")
	}
	return sec
}

func parseCert(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		t.Fatalf("not PEM: %q", pemBytes)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
