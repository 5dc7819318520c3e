package localcluster

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/kind/bringup"
)

func TestStartSteps(t *testing.T) {
	prepare := []string{"prepare the folder", "find the binaries", "choose the ports", "generate the PKI", "write the kubeconfigs"}
	apiServer := []string{"start etcd", "wait for etcd", "start kube-apiserver", "wait for kube-apiserver"}
	rest := []string{
		"start kube-controller-manager", "start kube-scheduler", "start kwok",
		"wait for kube-controller-manager and kube-scheduler", "add the kwok nodes", "wait for the default ServiceAccount",
	}
	for name, tc := range map[string]struct {
		opts Options
		want []string
	}{
		"every component":           {Options{}, append(append(append([]string{}, prepare...), apiServer...), rest...)},
		"a real node's":             {Options{NodeIP: net.ParseIP("10.0.0.1")}, append(append(append([]string{}, prepare...), apiServer...), rest...)},
		"API server only (APIOnly)": {Options{APIOnly: true}, append(append([]string{}, prepare...), apiServer...)},
	} {
		t.Run(name, func(t *testing.T) {
			s := &starter{cp: &ControlPlane{}, opts: tc.opts}
			if diff := cmp.Diff(tc.want, bringup.Names(s.steps())); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// The steps before etcd start no process: they leave the PKI, the kubeconfigs
// (pointing at the chosen API port) and an admin client.
func TestStepsBeforeEtcdPrepareTheFolder(t *testing.T) {
	dir := t.TempDir()
	bins := &Binaries{Etcd: "/nonexistent/etcd"}
	s := &starter{cp: &ControlPlane{Dir: dir}, opts: Options{Dir: dir, APIPort: 16443, Binaries: bins}}
	if err := bringup.Run(context.Background(), "test", nil, bringup.Upto(s.steps(), "start etcd")); err != nil {
		t.Fatal(err)
	}
	if len(s.cp.procs) != 0 || s.cp.Binaries != bins || s.cp.Client == nil {
		t.Fatalf("procs %v, binaries %v, client %v: want no process, Options.Binaries and a client", s.cp.procs, s.cp.Binaries, s.cp.Client)
	}
	if s.cp.Server != "https://127.0.0.1:16443" {
		t.Errorf("server %s, want Options.APIPort", s.cp.Server)
	}
	for _, f := range []string{"logs", "pki/ca.crt", "pki/apiserver.crt", "admin.kubeconfig", "kube-controller-manager.kubeconfig", "kube-scheduler.kubeconfig", "kwok.kubeconfig"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, "kwok.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		if c.Server != s.cp.Server {
			t.Errorf("kwok's kubeconfig points at %s, want %s", c.Server, s.cp.Server)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
		t.Error("a state file before any process started")
	}
}

// A failing step is named, and Start leaves no temporary folder behind.
func TestStartNamesTheFailingStep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("GPUVC_CACHE_DIR", t.TempDir()) // no manifest
	_, err := Start(context.Background(), Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "localcluster: step 2 of 15, find the binaries: ") {
		t.Fatalf("error %v: want the binaries step named", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("Start left %s in TMPDIR", left[0].Name())
	}
}
