package localkueue

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

func TestStartSteps(t *testing.T) {
	steps := []string{
		"prepare the folder and ports", "generate the webhook certificate", "write the configuration",
		"read the CRDs and webhook configurations", "write the metrics certificate",
		"apply the CRDs", "create the namespace", "create Kueue's ServiceAccount and RBAC",
		"start the controller manager", "wait for the controller manager",
		"register the webhooks", "wait for the webhooks through the API server",
	}
	for name, tc := range map[string]struct {
		opts Options
		want []string
	}{
		"from the manifest":       {Options{}, append([]string{"find Kueue in the manifest"}, steps...)},
		"binary and config given": {Options{Binary: "/k/kueue", ConfigDir: "/k/config"}, steps},
	} {
		t.Run(name, func(t *testing.T) {
			s := &starter{opts: tc.opts}
			if diff := cmp.Diff(tc.want, bringup.Names(s.steps())); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// The steps before the metrics certificate touch neither the machine outside
// Options.Dir nor the cluster: they leave the webhook certificate, Kueue's
// configuration and its CRDs and webhook configurations pointed at the chosen
// port. Kueue's config/components folder comes from the builder's manifest.
func TestStepsBeforeTheClusterPrepareKueuesFiles(t *testing.T) {
	m, err := localcluster.LoadManifest()
	if err != nil {
		t.Skip(err)
	}
	bin, configDir, err := m.Kueue()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	s := &starter{cfg: &rest.Config{Host: "https://127.0.0.1:1"}, opts: Options{Binary: bin, ConfigDir: configDir, Dir: dir, Namespace: DefaultNamespace}}
	if err := bringup.Run(context.Background(), "test", nil, bringup.Upto(s.steps(), "write the metrics certificate")); err != nil {
		t.Fatal(err)
	}
	if certs, err := os.ReadDir(filepath.Join(dir, "certs")); err != nil || len(certs) == 0 {
		t.Errorf("no webhook certificate in %s/certs: %v", dir, err)
	}
	if filepath.Dir(s.configPath) != dir {
		t.Errorf("configuration %s, want it in %s", s.configPath, dir)
	}
	if _, err := os.Stat(s.configPath); err != nil {
		t.Error(err)
	}
	if len(s.crds) == 0 || s.mutating == nil || s.validating == nil {
		t.Fatalf("%d CRDs, mutating %v, validating %v: want Kueue's", len(s.crds), s.mutating != nil, s.validating != nil)
	}
	for _, w := range s.validating.Webhooks {
		if url := *w.ClientConfig.URL; !strings.HasPrefix(url, s.webhookURL+"/") {
			t.Errorf("webhook %s calls %s, want %s", w.Name, url, s.webhookURL)
		}
	}
}
