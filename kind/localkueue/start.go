package localkueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/pki"
	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// starter carries a Kueue through Start's steps; each step fills in what the
// later ones need.
type starter struct {
	cfg  *rest.Config
	opts Options
	cs   kubernetes.Interface

	s          settings
	webhookURL string
	bundle     *pki.Serving
	configPath string
	crds       []*apiextensionsv1.CustomResourceDefinition
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
	kubeconfig string
	proc       *supervise.Process
}

// steps are Start's steps for s.opts, in order: what runs on this machine alone
// (binary, folder, ports, certificate, configuration, Kueue's manifests read
// and rewritten), then the cluster (CRDs, namespace, identity), then Kueue
// itself, and its webhooks registered only once it serves them.
func (s *starter) steps() []bringup.Step {
	var steps []bringup.Step
	if s.opts.Binary == "" || s.opts.ConfigDir == "" {
		steps = append(steps, bringup.Step{Name: "find Kueue in the manifest", Run: s.findKueue})
	}
	return append(steps,
		bringup.Step{Name: "prepare the folder and ports", Run: s.prepare},
		bringup.Step{Name: "generate the webhook certificate", Run: s.generateCertificate},
		bringup.Step{Name: "write the configuration", Run: s.writeConfiguration},
		bringup.Step{Name: "read the CRDs and webhook configurations", Run: s.readManifests},
		bringup.Step{Name: "write the metrics certificate", Run: func(context.Context) error { return ensureMetricsCertificate(s.bundle) }},
		bringup.Step{Name: "apply the CRDs", Run: func(ctx context.Context) error { return applyCRDs(ctx, s.cfg, s.crds) }},
		bringup.Step{Name: "create the namespace", Run: func(ctx context.Context) error { return ensureNamespace(ctx, s.cs, s.opts.Namespace) }},
		bringup.Step{Name: "create Kueue's ServiceAccount and RBAC", Run: s.createIdentity},
		bringup.Step{Name: "start the controller manager", Run: s.startController},
		bringup.Step{Name: "wait for the controller manager", Run: s.waitReady},
		bringup.Step{Name: "register the webhooks", Run: func(ctx context.Context) error {
			return applyWebhookConfigurations(ctx, s.cs, s.mutating, s.validating)
		}},
		bringup.Step{Name: "wait for the webhooks through the API server", Run: func(ctx context.Context) error {
			return waitWebhooks(ctx, s.cfg, []*supervise.Process{s.proc})
		}},
	)
}

// findKueue takes the binary and config/components folder the builder's
// manifest lists.
func (s *starter) findKueue(context.Context) error {
	m, err := localcluster.LoadManifest()
	if err != nil {
		return err
	}
	s.opts.Binary, s.opts.ConfigDir, err = m.Kueue()
	return err
}

// prepare makes a temporary folder unless Options name one, picks the health
// and webhook ports and builds the admin client.
func (s *starter) prepare(context.Context) (err error) {
	if s.opts.Dir == "" {
		if s.opts.Dir, err = os.MkdirTemp("", "gpuvc-kueue-"); err != nil {
			return err
		}
	}
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		return err
	}
	s.s = settings{namespace: s.opts.Namespace, healthPort: ports[0], webhookPort: ports[1], certDir: filepath.Join(s.opts.Dir, "certs"), usageHistory: s.opts.UsageHistory}
	s.webhookURL = fmt.Sprintf("https://127.0.0.1:%d", s.s.webhookPort)
	s.cs, err = kubernetes.NewForConfig(s.cfg)
	return err
}

// generateCertificate writes a throw-away CA and serving certificate for the
// webhooks on 127.0.0.1.
func (s *starter) generateCertificate(context.Context) (err error) {
	if s.bundle, err = pki.NewServing([]string{"127.0.0.1"}, 365*24*time.Hour); err != nil {
		return err
	}
	return s.bundle.WriteFiles(s.s.certDir)
}

func (s *starter) writeConfiguration(context.Context) (err error) {
	s.configPath, err = writeConfiguration(s.opts.Dir, s.s)
	return err
}

// readManifests reads Kueue's CRDs and webhook configurations from its
// config/components folder, rewritten to call the webhooks at s.webhookURL.
func (s *starter) readManifests(context.Context) (err error) {
	if s.crds, err = loadCRDs(s.opts.ConfigDir, s.webhookURL, s.bundle.CA); err != nil {
		return err
	}
	s.mutating, s.validating, err = webhookConfigurations(s.opts.ConfigDir, s.webhookURL, s.bundle.CA, s.opts.Namespace)
	return err
}

// createIdentity gives Kueue its ServiceAccount with Kueue's own RBAC and a
// kubeconfig for it.
func (s *starter) createIdentity(ctx context.Context) (err error) {
	s.kubeconfig, err = ensureIdentity(ctx, s.cs, s.cfg, s.opts.ConfigDir, s.opts.Namespace, s.opts.Dir)
	return err
}

func (s *starter) startController(context.Context) (err error) {
	s.proc, err = supervise.Start("kueue", s.opts.Binary, []string{"--config", s.configPath}, []string{"KUBECONFIG=" + s.kubeconfig}, s.opts.Dir, s.opts.Detached)
	return err
}

func (s *starter) waitReady(ctx context.Context) error {
	return supervise.WaitHTTP(ctx, "kueue", []*supervise.Process{s.proc}, fmt.Sprintf("http://127.0.0.1:%d/readyz", s.s.healthPort))
}
