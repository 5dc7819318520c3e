package install_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/e2e/localcp"
)

// TestInstallUpgradeUninstall walks a platform engineer's path on a real control
// plane with kwok nodes, which mark the manager and agent pods Running and Ready
// without running the image: so --wait sees a real rollout (scheduler, Deployment,
// DaemonSet and EndpointSlice controllers) without a container runtime.
// certManager.enabled=false because no cert-manager runs here (the default values
// are refused up front for that, tested below).
func TestInstallUpgradeUninstall(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc := []string{"--kubeconfig", cp.Kubeconfig}
	ns := installer.DefaultNamespace
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }

	// Nothing installed yet: uninstall is a no-op.
	r := gpuvc(t, append(kc, "uninstall")...)
	if r.code != 0 || !strings.Contains(r.out, "release gpuvc not found in namespace gpuvc-system: nothing to uninstall") {
		t.Fatalf("uninstall before install: %d %q %q", r.code, r.out, r.errOut)
	}

	// Install and wait, with progress.
	step("install")
	r = gpuvc(t, append(kc, "install", "--set", "certManager.enabled=false", "--wait", "--timeout", "2m")...)
	if r.code != 0 {
		t.Fatalf("install: exit %d\n%s", r.code, r.errOut)
	}
	for _, s := range []string{"gpuvc installed: release gpuvc, revision 1, namespace gpuvc-system", "deployed",
		"Deployment   gpuvc-manager", "2/2 replicas available", "Service      gpuvc-webhook   yes",
		"DaemonSet    gpuvc-agent", "3/3 pods available", "CRDs: teams.gpuvc.dev"} {
		if !strings.Contains(r.out, s) {
			t.Errorf("install summary does not say %q:\n%s", s, r.out)
		}
	}
	for _, s := range []string{"✓ Deployment gpuvc-manager: 2/2 replicas available", "✓ Service gpuvc-webhook: ",
		"✓ DaemonSet gpuvc-agent: 3/3 pods available", "next: gpuvc team create",
		// The runtime check's note: how GPU nodes pass.
		"note: GPU nodes whose NVIDIA container toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged containers", "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false"} {
		if !strings.Contains(r.errOut, s) {
			t.Errorf("install progress does not say %q:\n%s", s, r.errOut)
		}
	}
	if _, err := apiextensionsclient.NewForConfigOrDie(cp.Config).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "teams.gpuvc.dev", metav1.GetOptions{}); err != nil {
		t.Errorf("Team CRD: %v", err)
	}

	// The defaults need cert-manager, which this cluster lacks: refused before
	// anything changes, naming the value and both fixes.
	step("refused upgrade")
	r = gpuvc(t, append(kc, "install")...)
	if r.code != 1 || !strings.Contains(r.errOut, "certManager.enabled is true but this cluster has no cert-manager.io/v1 API") ||
		!strings.Contains(r.errOut, "--set certManager.enabled=false") {
		t.Errorf("install with cert-manager missing: %d %q", r.code, r.errOut)
	}

	// gpuvc is one per cluster: a second release elsewhere is refused up front.
	r = gpuvc(t, append(kc, "install", "-n", "gpuvc-two", "--set", "certManager.enabled=false")...)
	if r.code != 1 || !strings.Contains(r.errOut, "gpuvc is already installed in namespace gpuvc-system (release gpuvc)") ||
		!strings.Contains(r.errOut, "gpuvc install -n gpuvc-system") {
		t.Errorf("install in a second namespace: %d %q", r.code, r.errOut)
	}

	// Upgrade with a changed value: revision 2, the Deployment scaled to 1.
	step("upgrade")
	r = gpuvc(t, append(kc, "install", "--set", "certManager.enabled=false", "--set", "manager.replicas=1", "--wait", "-o", "json")...)
	if r.code != 0 {
		t.Fatalf("upgrade: exit %d\n%s", r.code, r.errOut)
	}
	var res installer.Result
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.out)
	}
	if res.Action != installer.Upgraded || res.Revision != 2 || res.Status != "deployed" || !res.Waited {
		t.Errorf("upgrade result %+v", res)
	}
	for _, w := range res.Workloads {
		if !w.Ready {
			t.Errorf("after --wait %s is not ready: %s", w.Workload, w.Status)
		}
	}
	d, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, "gpuvc-manager", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 1 {
		t.Errorf("manager Deployment after upgrade: %v %v", d.Spec.Replicas, err)
	}

	// --reuse-values keeps revision 2's values (one replica, no cert-manager: the
	// preflight would refuse otherwise) under the new one.
	step("upgrade --reuse-values")
	r = gpuvc(t, append(kc, "install", "--reuse-values", "--set", "webhook.timeoutSeconds=5", "--wait")...)
	if r.code != 0 || !strings.Contains(r.out, "gpuvc upgraded: release gpuvc, revision 3") {
		t.Fatalf("upgrade --reuse-values: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	d, err = cp.Client.AppsV1().Deployments(ns).Get(ctx, "gpuvc-manager", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 1 {
		t.Errorf("manager Deployment after --reuse-values: %v %v", d.Spec.Replicas, err)
	}
	wh, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, charts.WebhookConfigurationName, metav1.GetOptions{})
	if err != nil || *wh.Webhooks[0].TimeoutSeconds != 5 {
		t.Errorf("webhook timeout after --reuse-values --set webhook.timeoutSeconds=5: %v", err)
	}

	// A Team exists: uninstall refuses, naming it, and removes nothing.
	step("uninstall refused")
	scheme := runtime.NewScheme()
	if err := gpuvcv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	team := &gpuvcv1.Team{
		ObjectMeta: metav1.ObjectMeta{Name: "fraud"},
		Spec:       gpuvcv1.TeamSpec{Pool: "a100", Quota: gpuvcv1.Quota{GPUs: ptr.To[int32](1)}},
	}
	if err := c.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	r = gpuvc(t, append(kc, "uninstall", "--wait")...)
	if r.code != 1 {
		t.Errorf("uninstall with a Team: exit %d, want 1", r.code)
	}
	for _, s := range []string{"refusing to uninstall gpuvc: a Team exists (fraud)", "gpuvc team delete fraud --wait", "--force"} {
		if !strings.Contains(r.errOut, s) {
			t.Errorf("refusal does not say %q:\n%s", s, r.errOut)
		}
	}
	for _, get := range []func() error{
		func() error {
			_, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, "gpuvc-manager", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, charts.WebhookConfigurationName, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("refused uninstall removed something: %v", err)
		}
	}

	// No manager runs here, so the Team has no finalizer and goes at once.
	if err := c.Delete(ctx, team); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(team), &gpuvcv1.Team{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("Team fraud still there: %v", err)
	}

	// Uninstall and wait until the objects and their pods are gone; the CRD stays.
	step("uninstall")
	r = gpuvc(t, append(kc, "uninstall", "--wait", "--timeout", "1m")...)
	if r.code != 0 {
		t.Fatalf("uninstall: exit %d\n%s", r.code, r.errOut)
	}
	for _, s := range []string{"gpuvc uninstalled: release gpuvc, revision 3, namespace gpuvc-system", "kept: CRD teams.gpuvc.dev (Helm never deletes"} {
		if !strings.Contains(r.out, s) {
			t.Errorf("uninstall output does not say %q:\n%s", s, r.out)
		}
	}
	if !strings.Contains(r.errOut, "every object of the release is gone") {
		t.Errorf("uninstall --wait progress: %s", r.errOut)
	}
	if _, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, "gpuvc-manager", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("manager Deployment after uninstall --wait: %v", err)
	}
	pods, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left after uninstall --wait: %d %v", len(pods.Items), err)
	}
	if _, err := cp.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, charts.WebhookConfigurationName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("webhook configuration after uninstall: %v", err)
	}
	if _, err := apiextensionsclient.NewForConfigOrDie(cp.Config).ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "teams.gpuvc.dev", metav1.GetOptions{}); err != nil {
		t.Errorf("the Team CRD should stay: %v", err)
	}

	// Again: nothing to do, still success.
	step("second uninstall")
	r = gpuvc(t, append(kc, "uninstall")...)
	if r.code != 0 || !strings.Contains(r.out, "nothing to uninstall") {
		t.Errorf("second uninstall: %d %q %q", r.code, r.out, r.errOut)
	}
	// Installed again over the CRD that stayed; --force uninstalls despite a Team
	// and says which Teams it left unmanaged.
	step("reinstall")
	r = gpuvc(t, append(kc, "install", "--set", "certManager.enabled=false", "--set", "manager.replicas=1", "--set", "agent.enabled=false", "--wait")...)
	if r.code != 0 || !strings.Contains(r.out, "gpuvc installed: release gpuvc, revision 1") {
		t.Fatalf("reinstall: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	team = &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "research"}, Spec: gpuvcv1.TeamSpec{Pool: "h100"}}
	if err := c.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	step("uninstall --force")
	r = gpuvc(t, append(kc, "uninstall", "--force")...)
	if r.code != 0 || !strings.Contains(r.out, "gpuvc uninstalled: release gpuvc, revision 1") ||
		!strings.Contains(r.errOut, "warning: --force left these Teams without a manager: research") {
		t.Errorf("uninstall --force: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if err := c.Delete(ctx, team); err != nil {
		t.Error(err)
	}
	step("done")
}
