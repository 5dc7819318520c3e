package install_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/e2e/localcp"
)

// TestInstallDetectsKueue: on a real control plane, first without Kueue, then
// with the real Kueue v0.17.0 running. --kueue=require refuses before anything
// changes and names what to install; the default (detect) installs and says
// what is missing; with Kueue, require installs and the summary names the API.
func TestInstallDetectsKueue(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kc := []string{"--kubeconfig", cp.Kubeconfig}
	install := append(kc, "install", "--set", "certManager.enabled=false")
	uninstall := func() {
		t.Helper()
		if r := gpuvc(t, append(kc, "uninstall")...); r.code != 0 {
			t.Fatalf("uninstall: %d %s", r.code, r.errOut)
		}
	}

	// Without Kueue.
	r := gpuvc(t, append(install, "--kueue=require")...)
	if r.code != 1 || !strings.Contains(r.errOut, "--kueue=require: Kueue is not installed (no kueue.x-k8s.io API)") ||
		!strings.Contains(r.errOut, "install Kueue v0.15.0 or later (gpuvc is tested with v0.17.0") {
		t.Fatalf("install --kueue=require without Kueue: %d %q", r.code, r.errOut)
	}
	// Refused before anything changed: no release, no manager.
	if _, err := cp.Client.AppsV1().Deployments(installer.DefaultNamespace).Get(ctx, "gpuvc-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a refused install the manager Deployment is there (or: %v)", err)
	}
	r = gpuvc(t, install...)
	if r.code != 0 || !strings.Contains(r.out, "Kueue: Kueue is not installed (no kueue.x-k8s.io API): Teams with spec.queueing will not become ready") {
		t.Fatalf("install (detect) without Kueue: %d\n%s%s", r.code, r.out, r.errOut)
	}
	uninstall()
	if r := gpuvc(t, append(install, "--kueue=maybe")...); r.code == 0 || !strings.Contains(r.errOut, `--kueue "maybe": must be one of detect, require, off`) {
		t.Errorf("--kueue=maybe: %d %q", r.code, r.errOut)
	}

	// With the real Kueue.
	k, err := localcp.StartKueue(ctx, cp, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Stop() }()
	r = gpuvc(t, append(install, "--kueue=require", "-o", "yaml")...)
	if r.code != 0 {
		t.Fatalf("install --kueue=require with Kueue: %d %s", r.code, r.errOut)
	}
	for _, s := range []string{"kueue:", "mode: require", "usable: true", "- v1beta1", "- v1beta2", "message: 'Kueue found: kueue.x-k8s.io/v1beta2 served (versions "} {
		if !strings.Contains(r.out, s) {
			t.Errorf("install -o yaml with Kueue does not say %q:\n%s", s, r.out)
		}
	}
	uninstall()
}
