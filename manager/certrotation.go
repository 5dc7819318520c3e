package manager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// WebhookServiceName is the Service (in the namespace of the certificate Secret)
// through which the API server calls the webhook; a self-managed certificate is
// issued for its DNS names.
const WebhookServiceName = "gpuvc-webhook"

// Names of the files the webhook server reads from its cert folder.
const (
	certFile = corev1.TLSCertKey       // tls.crt
	keyFile  = corev1.TLSPrivateKeyKey // tls.key
	caKey    = "ca.crt"                // in the Secret, next to ca.key
)

// ParseCertSecret reads --webhook-cert-secret, <namespace>/<name>.
func ParseCertSecret(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, fmt.Errorf("--webhook-cert-secret %q: want <namespace>/<name>, e.g. gpuvc-system/gpuvc-webhook-tls", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// certRotation makes the manager its own certificate authority for the webhook,
// for clusters without cert-manager (Options.WebhookCertSecret; the chart with
// certManager.enabled=false). cert-controller's rotator keeps a CA and a serving
// certificate for <WebhookServiceName>.<namespace>.svc in the Secret and that CA
// in the caBundle of both webhook configurations, renewing both before they
// expire. It writes nothing to disk: certFiles copies the pair from the Secret
// into the cert folder, and the webhook server starts only once the rotator
// reports the files there and the CA injected (ready).
type certRotation struct {
	cs      kubernetes.Interface
	secret  types.NamespacedName
	certDir string
	dnsName string
	ready   chan struct{}
}

func newCertRotation(ctx context.Context, cfg *rest.Config, secret types.NamespacedName, certDir string) (*certRotation, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// The rotator fills the Secret but does not create it (the chart does); say
	// so at start instead of failing after the rotator's retries.
	if _, err := cs.CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("webhook certificate Secret %s, which the manager fills but does not create: %w", secret, err)
	}
	// The rotator takes any tls.crt in the folder for the certificate: files left
	// by an earlier run must not make it report ready before this one wrote them.
	for _, f := range []string{certFile, keyFile} {
		if err := os.Remove(filepath.Join(certDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("clearing the webhook cert folder: %w", err)
		}
	}
	return &certRotation{
		cs: cs, secret: secret, certDir: certDir,
		dnsName: WebhookServiceName + "." + secret.Namespace + ".svc",
		ready:   make(chan struct{}),
	}, nil
}

// gate holds srv back until the certificate is in place: controller-runtime's
// webhook server fails at start when its cert folder is empty.
func (r *certRotation) gate(srv webhook.Server) webhook.Server {
	return gatedServer{Server: srv, ready: r.ready}
}

// addTo registers the rotator, its namespaced cache and controller, and the file
// copier with mgr.
func (r *certRotation) addTo(mgr ctrl.Manager) error {
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      r.secret,
		CertDir:        r.certDir,
		CAName:         "gpuvc-webhook-ca",
		CAOrganization: "gpuvc",
		DNSName:        r.dnsName,
		ExtraDNSNames:  []string{r.dnsName + ".cluster.local"},
		IsReady:        r.ready,
		Webhooks: []rotator.WebhookInfo{
			{Name: WebhookConfigName, Type: rotator.Mutating},
			{Name: WebhookConfigName, Type: rotator.Validating},
		},
		FieldOwner: "gpuvc-manager",
		// Every replica serves the webhook, so every replica needs the files and
		// the ready signal; with true, the rotator (and IsReady) would run on the
		// leader only and the other replicas would never serve nor turn ready.
		// Replicas rotating at once are safe: the Secret is updated with the
		// resourceVersion read, so a replica that loses the race gets a conflict,
		// retries and finds the winner's valid certificate; all of them then
		// write the same CA into the configurations.
		RequireLeaderElection: false,
	})
	if err != nil {
		return fmt.Errorf("adding the webhook certificate rotator: %w", err)
	}
	return mgr.Add(&certFiles{
		cs: r.cs, secret: r.secret, dir: r.certDir, dnsName: r.dnsName,
		log: mgr.GetLogger().WithName("webhook-cert-files"),
	})
}

// readyCheck is a readyz check: not ready until the certificate is in the cert
// folder and its CA in the webhook configurations.
func (r *certRotation) readyCheck(*http.Request) error {
	select {
	case <-r.ready:
		return nil
	default:
		return fmt.Errorf("webhook certificate not in place yet (Secret %s, caBundle of %s)", r.secret, WebhookConfigName)
	}
}

// gatedServer is a webhook server that starts listening once ready is closed.
type gatedServer struct {
	webhook.Server
	ready <-chan struct{}
}

func (s gatedServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	}
	return s.Server.Start(ctx)
}

// certFiles copies the serving certificate and key from the Secret into the
// webhook's cert folder on every replica, whenever the Secret holds a pair valid
// for the Service. The chart does not mount the Secret in this mode: the kubelet
// refreshes a mounted Secret only at its next sync of the pod (a minute or more
// after the rotator wrote it), which would keep a fresh install unready as long.
type certFiles struct {
	cs      kubernetes.Interface
	secret  types.NamespacedName
	dir     string
	dnsName string
	log     logr.Logger
}

// NeedLeaderElection: every replica serves the webhook.
func (w *certFiles) NeedLeaderElection() bool { return false }

// Start watches the one Secret (its namespace, by name) until ctx ends.
func (w *certFiles) Start(ctx context.Context) error {
	inf := coreinformers.NewFilteredSecretInformer(w.cs, w.secret.Namespace, 0, toolscache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.secret.Name).String()
	})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.write,
		UpdateFunc: func(_, obj any) { w.write(obj) },
	}); err != nil {
		return err
	}
	inf.Run(ctx.Done())
	return nil
}

func (w *certFiles) write(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	crt, key := s.Data[certFile], s.Data[keyFile]
	// Nothing the rotator would not accept itself: it takes the mere presence of
	// tls.crt for "mounted", so an empty or foreign pair must not get there.
	if valid, _ := rotator.ValidCert(s.Data[caKey], crt, key, w.dnsName, nil, time.Now()); !valid {
		return
	}
	if err := writeCertFiles(w.dir, crt, key); err != nil {
		w.log.Error(err, "writing the webhook's serving certificate", "dir", w.dir)
	}
}

// writeCertFiles replaces tls.key, then tls.crt, each atomically (rename), when
// its content changed. Key first: tls.crt appearing is what the rotator and the
// webhook server's certificate watcher react to.
func writeCertFiles(dir string, crt, key []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{keyFile, key}, {certFile, crt}} {
		path := filepath.Join(dir, f.name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			continue
		}
		tmp, err := os.CreateTemp(dir, "."+f.name+"-*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(f.data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}
