package localkueue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/pki"
	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// DefaultNamespace is Kueue's own namespace unless Options say otherwise.
const DefaultNamespace = "kueue-system"

// Options configure a local Kueue.
type Options struct {
	// Binary is Kueue's controller manager; ConfigDir its module's
	// config/components folder. Both empty: the ones the builder's manifest lists.
	Binary, ConfigDir string
	// Dir receives Kueue's configuration, certificates and log (kueue.log).
	// Empty: a new temporary folder.
	Dir string
	// Namespace is Kueue's own namespace; empty: DefaultNamespace.
	Namespace string
	// Detached lets Kueue outlive this program.
	Detached bool
	// Log receives progress lines. Nil discards them.
	Log io.Writer
	// UsageHistory, when set, turns on Kueue's admission fair sharing with it
	// (the Configuration's admissionFairSharing): ClusterQueues whose
	// admissionScope asks for it order their LocalQueues' workloads by decayed
	// past GPU use. Nil: off, as in Kueue's own default configuration.
	UsageHistory *UsageHistory
}

// UsageHistory is Kueue's admissionFairSharing: a LocalQueue's usage is sampled
// every SamplingInterval into an average whose past weighs half after HalfLife.
// Only GPUs count (CPU, memory and ephemeral storage weigh 0): gpuvc queues
// GPUs and gives the rest a quota no team reaches.
type UsageHistory struct {
	HalfLife, SamplingInterval time.Duration
}

// Kueue is a running local Kueue controller manager.
type Kueue struct {
	Namespace string
	// User is who Kueue's controller authenticates as (User(Namespace)): the
	// only user gpuvc's webhook lets lift Kueue's admission gate.
	User       string
	WebhookURL string // https://127.0.0.1:<port>: what the API server calls
	LogPath    string
	proc       *supervise.Process
}

// Start installs Kueue's CRDs and webhook configurations into the cluster cfg
// (an admin's) reaches, starts Kueue's controller manager under its own
// ServiceAccount (identity.go), and waits until its webhooks answer through the
// API server. It runs the steps of start.go in order, each named in the
// progress on Options.Log and, when it fails, in the error. On error nothing it
// started is left running.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Kueue, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	began := time.Now()
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	s := &starter{cfg: cfg, opts: opts}
	if err := bringup.Run(ctx, "localkueue", log, s.steps()); err != nil {
		if s.proc != nil {
			_ = s.proc.Stop(10 * time.Second)
		}
		return nil, err
	}
	k := &Kueue{Namespace: s.opts.Namespace, User: User(s.opts.Namespace), WebhookURL: s.webhookURL, LogPath: filepath.Join(s.opts.Dir, "kueue.log"), proc: s.proc}
	fmt.Fprintf(log, "kueue %s ready in %v as %s (webhooks at %s, log %s)\n", localcluster.KueueVersion, time.Since(began).Round(time.Millisecond), k.User, k.WebhookURL, k.LogPath)
	return k, nil
}

// PID is the controller manager's process id.
func (k *Kueue) PID() int { return k.proc.PID() }

// Stop stops the controller manager (its CRDs, objects and webhook
// configurations stay; with Kueue gone, the webhooks refuse what they cover).
func (k *Kueue) Stop() error { return k.proc.Stop(10 * time.Second) }

// Exited reports whether Kueue has ended, with the tail of its log.
func (k *Kueue) Exited() error { return k.proc.Exited() }

// waitWebhooks waits until a dry-run ResourceFlavor passes Kueue's webhooks
// through the API server: then Kueue admits objects and pods.
func waitWebhooks(ctx context.Context, cfg *rest.Config, procs []*supervise.Process) error {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	flavors := dc.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"})
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": "gpuvc-webhook-probe"},
	}}
	return supervise.Poll(ctx, "kueue webhooks through the API server", procs, func(ctx context.Context) (bool, error) {
		_, err := flavors.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil || apierrors.IsAlreadyExists(err), err
	})
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// metricsCertDir is where Kueue v0.17 reads its metrics certificate when it does
// not manage certificates itself; the path is fixed in its main package.
const metricsCertDir = "/etc/kueue/metrics/certs"

// ensureMetricsCertificate gives Kueue a metrics certificate to load at start:
// it refuses to start without one, though the local runner never serves metrics.
// An existing pair is kept.
func ensureMetricsCertificate(b *pki.Serving) error {
	if _, err := os.Stat(filepath.Join(metricsCertDir, pki.CertFile)); err == nil {
		return nil
	}
	if err := b.WriteFiles(metricsCertDir); err != nil {
		return errors.Join(fmt.Errorf("Kueue %s reads a metrics certificate from %s (fixed in its code) and will not start without one; writing one failed: create that folder writable for this user, or run as root", localcluster.KueueVersion, metricsCertDir), err)
	}
	return nil
}
