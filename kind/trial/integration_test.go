package trial

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// TestMain starts a real kube-apiserver (no nodes, no controllers) for the tests
// that check the trial's objects against it; none under -short.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{APIOnly: true}, nil))
}

// What the trial sends to a cluster is accepted by a real API server: the chart
// installed with the trial's values (the step Start runs, without waiting, since
// nothing runs pods here), the demo Teams through the CLI's library (CRD schema
// and CEL rules), and the demo pods (server-side dry run).
func TestTheTrialsObjectsAreAcceptedByAnAPIServer(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := &Cluster{Name: "local", Kubeconfig: cp.Kubeconfig, Config: cp.Config, Client: cp.Client, SystemNodeIP: "172.18.0.3"}
	opts := Options{Image: "ghcr.io/gpuvc/gpuvc:test", Pools: Pools(), Timeout: 2 * time.Minute}
	var log bytes.Buffer
	if err := installGpuvc(ctx, c, opts, newProgress(&log), false); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, pool := range []string{"system", "a100", "h100"} {
		if _, err := cp.Client.AppsV1().DaemonSets(Namespace).Get(ctx, "gpuvc-agent-"+pool, metav1.GetOptions{}); err != nil {
			t.Errorf("agent of pool %s: %v", pool, err)
		}
	}

	tc, err := teamctl.New(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "trial-pods"}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager runs here to create it.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := cp.Client.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range DemoTeams("") {
		if _, err := tc.Apply(ctx, d.Team); err != nil {
			t.Errorf("team %s: %v", d.Team.Name, err)
		}
		t.Cleanup(func() { _, _ = tc.Delete(context.Background(), d.Team.Name) })
		for _, p := range d.Pods {
			p.Namespace = ns.Name
			if _, err := cp.Client.CoreV1().Pods(ns.Name).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("team %s pod %s: %v", d.Team.Name, p.Name, err)
			}
		}
	}
}
