package manager_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/releaseutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	managercmd "github.com/gpuvc/gpuvc/cmd/gpuvc/commands/manager"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager"
)

// childEnv makes the test binary run `gpuvc manager` instead of the tests: each
// manager of these tests is its own process, as each replica is its own pod (and
// controller-runtime allows a controller name once per process).
const childEnv = "GPUVC_TEST_MANAGER_CHILD"

type childSpec struct {
	Kubeconfig string   `json:"kubeconfig"`
	Args       []string `json:"args"`
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(localcp.RunTests(m, localcluster.Options{APIOnly: true}, nil))
}

// runChild runs `gpuvc manager` with the spec's flags until SIGTERM.
func runChild(spec string) int {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	cmd := managercmd.NewCommand(cli.StandardStreams(), &cli.Globals{Kubeconfig: c.Kubeconfig})
	cmd.SetArgs(c.Args)
	cmd.SilenceUsage = true
	if err := cmd.Execute(); err != nil {
		return 1
	}
	return 0
}

func TestParseCertSecret(t *testing.T) {
	for in, want := range map[string]types.NamespacedName{
		"gpuvc-system/gpuvc-webhook-tls": {Namespace: "gpuvc-system", Name: "gpuvc-webhook-tls"},
		"ns/a.b":                         {Namespace: "ns", Name: "a.b"},
		"gpuvc-webhook-tls":              {},
		"/gpuvc-webhook-tls":             {},
		"gpuvc-system/":                  {},
		"a/b/c":                          {},
		"Gpuvc/x":                        {},
	} {
		got, err := manager.ParseCertSecret(in)
		if (err != nil) != (want == types.NamespacedName{}) || got != want {
			t.Errorf("ParseCertSecret(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

const (
	certNS     = "gpuvc-certs"
	certSecret = "gpuvc-webhook-tls"
)

var serviceDNS = manager.WebhookServiceName + "." + certNS + ".svc"

// TestCertRotation runs `gpuvc manager --webhook-cert-secret` as the chart does
// without cert-manager, against an empty Secret and the webhook configurations the
// chart renders:
//   - two replicas started together (leader-elected, so one is not the leader)
//     write one CA and serving certificate for gpuvc-webhook.<ns>.svc into the
//     Secret and copy it into their cert folders; while the test holds back the
//     caBundle writes, neither is ready nor listening; once released, both
//     configurations carry the CA, both replicas turn ready and serve that
//     certificate to a client that trusts only the caBundle and checks the
//     Service's name, as the API server does;
//   - a restart keeps the Secret as it is (no new CA or certificate);
//   - a serving certificate that stops being valid (here removed) is replaced
//     under the same CA, and the running webhook server picks the new one up.
func TestCertRotation(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	setupCertTest(ctx, t, cp)
	secrets := cp.Client.CoreV1().Secrets(certNS)

	start := time.Now()
	release := holdCABundles(ctx, t, cp)
	a := startManager(t, cp, "a")
	b := startManager(t, cp, "b")
	var sec *corev1.Secret
	poll.Until(ctx, t, 2*time.Minute, "a CA and serving certificate in the Secret", func(ctx context.Context) (bool, error) {
		s, err := secrets.Get(ctx, certSecret, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		sec = s
		return len(s.Data["tls.crt"]) > 0, nil
	})
	checkServingCert(t, sec)
	for _, m := range []*managerProc{a, b} {
		poll.Until(ctx, t, 2*time.Minute, "the certificate files of replica "+m.name, func(context.Context) (bool, error) {
			return m.filesEqual(sec), nil
		})
	}
	// CA not injected yet: neither replica is ready, neither listens.
	for _, m := range []*managerProc{a, b} {
		if ok, body := m.ready(ctx); ok || !strings.Contains(body, "[-]webhook-certificate failed") {
			t.Errorf("replica %s ready before the caBundle was written: %v %q", m.name, ok, body)
		}
		if c, err := net.DialTimeout("tcp", m.webhookAddr(), time.Second); err == nil {
			c.Close()
			t.Errorf("replica %s serves the webhook before its certificate is in place", m.name)
		}
	}
	if mb, vb := caBundles(ctx, t, cp); len(mb) > 0 || len(vb) > 0 {
		t.Fatalf("caBundle written while the test holds it back: %q %q", mb, vb)
	}
	release()
	a.waitReady(ctx, t)
	b.waitReady(ctx, t)
	t.Logf("two replicas ready %v after start", time.Since(start).Round(time.Millisecond))
	checkInjected(ctx, t, cp, sec.Data["ca.crt"])
	for _, m := range []*managerProc{a, b} {
		m.checkServes(ctx, t, sec)
	}
	if got, err := secrets.Get(ctx, certSecret, metav1.GetOptions{}); err != nil || got.ResourceVersion != sec.ResourceVersion {
		t.Errorf("the Secret was written again after both replicas agreed on it (%v)", err)
	}
	if l, err := cp.Client.CoordinationV1().Leases(certNS).Get(ctx, "gpuvc-manager.gpuvc.dev", metav1.GetOptions{}); err != nil || l.Spec.HolderIdentity == nil {
		t.Errorf("no leader among the replicas: %v", err)
	}
	a.stop(t)
	b.stop(t)

	t.Run("restart keeps the certificate", func(t *testing.T) {
		start := time.Now()
		c := startManager(t, cp, "c")
		c.waitReady(ctx, t)
		t.Logf("ready %v after start", time.Since(start).Round(time.Millisecond))
		got, err := secrets.Get(ctx, certSecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != sec.ResourceVersion {
			t.Errorf("Secret rewritten on restart (resourceVersion %s -> %s)", sec.ResourceVersion, got.ResourceVersion)
		}
		if !c.filesEqual(sec) {
			t.Error("cert files differ from the Secret")
		}
		checkInjected(ctx, t, cp, sec.Data["ca.crt"])
		c.checkServes(ctx, t, sec)

		// Renewal: a serving certificate the rotator finds invalid (as one near its
		// end) is replaced under the same CA, and the server reloads it.
		broken := got.DeepCopy()
		delete(broken.Data, "tls.crt")
		if _, err := secrets.Update(ctx, broken, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var renewed *corev1.Secret
		poll.Until(ctx, t, 2*time.Minute, "a new serving certificate", func(ctx context.Context) (bool, error) {
			s, err := secrets.Get(ctx, certSecret, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			renewed = s
			return len(s.Data["tls.crt"]) > 0, nil
		})
		checkServingCert(t, renewed)
		if !bytes.Equal(renewed.Data["ca.crt"], sec.Data["ca.crt"]) || bytes.Equal(renewed.Data["tls.crt"], sec.Data["tls.crt"]) {
			t.Error("renewal changed the CA or kept the old certificate")
		}
		poll.Until(ctx, t, 2*time.Minute, "the renewed files", func(context.Context) (bool, error) { return c.filesEqual(renewed), nil })
		poll.Until(ctx, t, 2*time.Minute, "the webhook serving the renewed certificate", func(ctx context.Context) (bool, error) {
			leaf, err := c.served(ctx, sec.Data["ca.crt"])
			return err == nil && bytes.Equal(leaf, der(t, renewed.Data["tls.crt"])), nil
		})
		checkInjected(ctx, t, cp, sec.Data["ca.crt"])
		if ok, body := c.ready(ctx); !ok {
			t.Errorf("not ready after the renewal: %s", body)
		}
		c.stop(t)
	})
}

// setupCertTest creates what the chart installs for the manager without
// cert-manager: the Team CRD, the namespace, the empty Secret and both webhook
// configurations as rendered (no caBundle).
func setupCertTest(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane) {
	t.Helper()
	if err := charts.InstallCRDs(ctx, cp.Config); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: certSecret, Namespace: certNS}, Type: corev1.SecretTypeOpaque}
	if _, err := cp.Client.CoreV1().Secrets(certNS).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mutating, validating := chartWebhooks(t)
	api := cp.Client.AdmissionregistrationV1()
	if _, err := api.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// chartWebhooks renders the embedded chart with certManager.enabled=false and
// returns its two webhook configurations.
func chartWebhooks(t *testing.T) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	ch, err := charts.Chart()
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly = true, true
	inst.ReleaseName, inst.Namespace = "gpuvc", certNS
	rel, err := inst.Run(ch, map[string]any{"certManager": map[string]any{"enabled": false}})
	if err != nil {
		t.Fatal(err)
	}
	var m *admissionregistrationv1.MutatingWebhookConfiguration
	var v *admissionregistrationv1.ValidatingWebhookConfiguration
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			m = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict([]byte(doc), m)
		case "ValidatingWebhookConfiguration":
			v = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict([]byte(doc), v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if m == nil || v == nil || m.Name != manager.WebhookConfigName || v.Name != manager.WebhookConfigName {
		t.Fatalf("chart webhook configurations: %v %v", m, v)
	}
	return m, v
}

// holdCABundles refuses, with a ValidatingAdmissionPolicy, every update of the
// gpuvc-syncer configurations until release is called, so the test sees the
// replicas between "certificate written" and "CA injected".
func holdCABundles(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane) (release func()) {
	t.Helper()
	const name = "test-hold-cabundle"
	api := cp.Client.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"admissionregistration.k8s.io"}, APIVersions: []string{"v1"},
							Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("object.metadata.name != %q", manager.WebhookConfigName),
				Message:    "held by the test",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Enforced once the API server's informers have both: probe with dry runs.
	poll.Until(ctx, t, 2*time.Minute, "the hold on the webhook configurations", func(ctx context.Context) (bool, error) {
		m, err := api.MutatingWebhookConfigurations().Get(ctx, manager.WebhookConfigName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		m.Labels = map[string]string{"probe": "x"}
		_, err = api.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "held by the test"), nil
	})
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		for _, err := range []error{
			api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{}),
			api.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}
	}
	t.Cleanup(release)
	return release
}

// checkServingCert: the Secret holds a CA and a serving certificate for the
// Service's names signed by it, with their keys.
func checkServingCert(t *testing.T, sec *corev1.Secret) {
	t.Helper()
	for _, k := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
		if len(sec.Data[k]) == 0 {
			t.Fatalf("Secret lacks %s (has %v)", k, slices.Sorted(maps.Keys(sec.Data)))
		}
	}
	if _, err := tls.X509KeyPair(sec.Data["tls.crt"], sec.Data["tls.key"]); err != nil {
		t.Errorf("tls.crt and tls.key: %v", err)
	}
	ca, err := x509.ParseCertificate(der(t, sec.Data["ca.crt"]))
	if err != nil || !ca.IsCA {
		t.Fatalf("ca.crt: %v (CA %v)", err, ca != nil && ca.IsCA)
	}
	leaf, err := x509.ParseCertificate(der(t, sec.Data["tls.crt"]))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, name := range []string{serviceDNS, serviceDNS + ".cluster.local"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
}

// checkInjected: both configurations' webhooks carry exactly the Secret's CA.
func checkInjected(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane, ca []byte) {
	t.Helper()
	mb, vb := caBundles(ctx, t, cp)
	if !bytes.Equal(mb, ca) || !bytes.Equal(vb, ca) {
		t.Errorf("caBundle mutating %d bytes, validating %d bytes; want the Secret's ca.crt (%d bytes)", len(mb), len(vb), len(ca))
	}
}

func caBundles(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane) (mutating, validating []byte) {
	t.Helper()
	api := cp.Client.AdmissionregistrationV1()
	m, err := api.MutatingWebhookConfigurations().Get(ctx, manager.WebhookConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := api.ValidatingWebhookConfigurations().Get(ctx, manager.WebhookConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m.Webhooks[0].ClientConfig.CABundle, v.Webhooks[0].ClientConfig.CABundle
}

// managerProc is one `gpuvc manager` process (a replica).
type managerProc struct {
	name                string
	cmd                 *exec.Cmd
	exited              chan struct{}
	err                 error
	healthPort, webPort int
	certDir             string
}

func startManager(t *testing.T, cp *localcluster.ControlPlane, name string) *managerProc {
	t.Helper()
	dir := t.TempDir()
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	m := &managerProc{
		name: name, exited: make(chan struct{}),
		healthPort: ports[0], webPort: ports[1],
		certDir: filepath.Join(dir, "serving-certs"), // created by the manager
	}
	spec, err := json.Marshal(childSpec{Kubeconfig: cp.Kubeconfig, Args: []string{
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(m.healthPort),
		"--webhook-port=" + strconv.Itoa(m.webPort),
		"--webhook-cert-dir=" + m.certDir,
		"--webhook-cert-secret=" + certNS + "/" + certSecret,
		"--leader-elect", "--leader-election-namespace=" + certNS,
		"--reserve-image=",
	}})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(os.Args[0], "-test.run=^$")
	m.cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		m.err = m.cmd.Wait()
		logFile.Close()
		close(m.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-m.exited:
		default:
			_ = m.cmd.Process.Kill()
			<-m.exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("manager %s log (end):\n%s", name, b)
		}
	})
	return m
}

// stop sends SIGTERM, as the kubelet does, and expects a clean exit.
func (m *managerProc) stop(t *testing.T) {
	t.Helper()
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		if m.err != nil {
			t.Errorf("manager %s: %v", m.name, m.err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("manager %s did not stop within 30s", m.name)
	}
}

func (m *managerProc) webhookAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.webPort))
}

// ready asks /readyz?verbose.
func (m *managerProc) ready(ctx context.Context) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", m.healthPort), nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, string(body)
}

func (m *managerProc) waitReady(ctx context.Context, t *testing.T) {
	t.Helper()
	var body string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.exited:
			return false, fmt.Errorf("manager exited: %v", m.err)
		default:
		}
		var ok bool
		ok, body = m.ready(ctx)
		return ok, nil
	})
	if err != nil {
		t.Fatalf("manager %s ready: %v (last /readyz: %s)", m.name, err, body)
	}
}

// filesEqual: the cert folder holds the Secret's serving certificate and key.
func (m *managerProc) filesEqual(sec *corev1.Secret) bool {
	crt, err1 := os.ReadFile(filepath.Join(m.certDir, "tls.crt"))
	key, err2 := os.ReadFile(filepath.Join(m.certDir, "tls.key"))
	return err1 == nil && err2 == nil && bytes.Equal(crt, sec.Data["tls.crt"]) && bytes.Equal(key, sec.Data["tls.key"])
}

// served connects to the webhook as the API server would through the Service:
// trusting only caPEM and checking the Service's DNS name. It returns the leaf
// certificate (DER).
func (m *managerProc) served(ctx context.Context, caPEM []byte) ([]byte, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA")
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: serviceDNS, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", m.webhookAddr())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Raw, nil
}

func (m *managerProc) checkServes(ctx context.Context, t *testing.T, sec *corev1.Secret) {
	t.Helper()
	leaf, err := m.served(ctx, sec.Data["ca.crt"])
	if err != nil {
		t.Errorf("replica %s: TLS to the webhook as %s with the caBundle: %v", m.name, serviceDNS, err)
		return
	}
	if !bytes.Equal(leaf, der(t, sec.Data["tls.crt"])) {
		t.Errorf("replica %s serves a certificate other than the Secret's", m.name)
	}
}

func der(t *testing.T, pemBytes []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		t.Fatalf("not PEM: %q", pemBytes)
	}
	return b.Bytes
}
