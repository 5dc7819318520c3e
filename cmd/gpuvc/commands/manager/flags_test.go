package manager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	teamrec "github.com/gpuvc/gpuvc/manager/team"
)

func TestServerURLTemplate(t *testing.T) {
	team := &gpuvcv1.Team{}
	team.Name = "fraud"
	svc := teamrec.ServiceAddress{ClusterIP: "10.96.0.20", NodePort: 31443}
	for name, tc := range map[string]struct {
		text, want string
		usesSvc    bool
	}{
		"per team host": {text: "https://{{.Team}}.vc.example.com", want: "https://fraud.vc.example.com"},
		"service IP":    {text: "https://{{.ServiceIP}}:443", want: "https://10.96.0.20:443", usesSvc: true},
		"node port":     {text: "https://172.18.0.2:{{.NodePort}}", want: "https://172.18.0.2:31443", usesSvc: true},
		"namespace":     {text: "https://{{.Release}}.{{.Namespace}}.svc", want: "https://fraud.team-fraud.svc"},
	} {
		t.Run(name, func(t *testing.T) {
			url, usesSvc, err := serverURLFunc(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := url(team, svc); got != tc.want || usesSvc != tc.usesSvc {
				t.Errorf("got %q (uses the Service %v), want %q (%v)", got, usesSvc, tc.want, tc.usesSvc)
			}
		})
	}
	if _, _, err := serverURLFunc("https://{{.Cluster}}"); err == nil || !strings.Contains(err.Error(), ".NodePort") {
		t.Errorf("unknown field: err = %v, want one listing the fields", err)
	}
}

func TestReadValues(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("controlPlane:\n  distro:\n    k8s:\n      image: {tag: v1.36.3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readValues(good)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"controlPlane": map[string]any{"distro": map[string]any{"k8s": map[string]any{"image": map[string]any{"tag": "v1.36.3"}}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	list := filepath.Join(dir, "list.yaml")
	if err := os.WriteFile(list, []byte("- a\n- b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readValues(list); err == nil || !strings.Contains(err.Error(), "list.yaml") {
		t.Errorf("a list: err = %v, want one naming the file", err)
	}
	if _, err := readValues(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "--vcluster-values") {
		t.Errorf("missing file: err = %v, want one naming the flag", err)
	}
}

func TestTeamWorkersBounds(t *testing.T) {
	for _, n := range []int{1, teamrec.DefaultWorkers, maxTeamWorkers} {
		if err := checkTeamWorkers(n); err != nil {
			t.Errorf("--team-workers %d: %v", n, err)
		}
	}
	for _, n := range []int{0, -1, maxTeamWorkers + 1} {
		err := checkTeamWorkers(n)
		if err == nil || !strings.Contains(err.Error(), "--team-workers") || !strings.Contains(err.Error(), "want 1 to 64") {
			t.Errorf("--team-workers %d: err = %v, want one naming the flag and its bounds", n, err)
		}
	}
}

func TestKubeAPILimit(t *testing.T) {
	for _, ok := range []struct {
		qps   float32
		burst int
	}{{50, 100}, {5, 1}, {-1, 0}} {
		if err := checkKubeAPILimit(ok.qps, ok.burst); err != nil {
			t.Errorf("--kube-api-qps %g --kube-api-burst %d: %v", ok.qps, ok.burst, err)
		}
	}
	for _, bad := range []struct {
		qps   float32
		burst int
	}{{0, 100}, {50, 0}} {
		if err := checkKubeAPILimit(bad.qps, bad.burst); err == nil || !strings.Contains(err.Error(), "--kube-api-qps") {
			t.Errorf("--kube-api-qps %g --kube-api-burst %d: err = %v, want one naming the flags", bad.qps, bad.burst, err)
		}
	}
}

func TestUsageHistoryPools(t *testing.T) {
	if err := checkUsageHistoryPools([]string{"a100", "h100-sxm"}); err != nil {
		t.Errorf("valid pools refused: %v", err)
	}
	for _, bad := range []string{"", "A100", "a100,", "-a100", strings.Repeat("a", 64)} {
		err := checkUsageHistoryPools([]string{"a100", bad})
		if err == nil || !strings.Contains(err.Error(), "--usage-history-pool") || !strings.Contains(err.Error(), "limit:") {
			t.Errorf("pool %q: err = %v, want a refusal naming the flag and the limit", bad, err)
		}
	}
}
