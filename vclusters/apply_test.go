package vclusters

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeHelm is a Client whose Helm storage is in memory and whose Helm kube client
// only prints: Apply's decisions without a cluster.
type fakeHelm struct {
	*Client
	store *storage.Storage
	clock *clocktesting.FakeClock
	// kube is what Helm's configuration uses; swap it to make operations fail.
	kube *kubefake.FailingKubeClient
}

func newFakeHelm(t *testing.T) *fakeHelm {
	t.Helper()
	mem := driver.NewMemory()
	mem.SetNamespace("team-fraud")
	f := &fakeHelm{
		store: storage.Init(mem),
		clock: clocktesting.NewFakeClock(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)),
		kube:  &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}},
	}
	f.Client = &Client{
		kube:       fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-fraud"}}),
		clock:      f.clock,
		staleAfter: DefaultStaleAfter,
		maxHistory: DefaultMaxHistory,
	}
	f.actionConfig = func(context.Context, string) (*action.Configuration, error) {
		return &action.Configuration{
			Releases:     f.store,
			KubeClient:   f.kube,
			Capabilities: chartutil.DefaultCapabilities,
			Log:          func(string, ...any) {},
		}, nil
	}
	return f
}

// tinyChart writes a chart named vcluster whose one template shows some values.
func tinyChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: vcluster\nversion: 0.0.1\n")
	write("values.yaml", "telemetry:\n  enabled: true\n")
	write("templates/cm.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  pool: {{ .Values.sync.fromHost.nodes.selector.labels | toJson | quote }}
`)
	return dir
}

func (f *fakeHelm) revisions(t *testing.T) map[int]release.Status {
	t.Helper()
	h, err := f.store.History("fraud")
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return map[int]release.Status{}
	}
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]release.Status{}
	for _, r := range h {
		got[r.Version] = r.Info.Status
	}
	return got
}

func mustApply(t *testing.T, f *fakeHelm, spec Spec, want ApplyResult) {
	t.Helper()
	got, err := f.Apply(context.Background(), spec)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got != want {
		t.Fatalf("Apply = %+v, want %+v", got, want)
	}
}

func equalRevisions(t *testing.T, f *fakeHelm, want map[int]release.Status) {
	t.Helper()
	got := f.revisions(t)
	if len(got) != len(want) {
		t.Fatalf("revisions = %v, want %v", got, want)
	}
	for v, s := range want {
		if got[v] != s {
			t.Fatalf("revisions = %v, want %v", got, want)
		}
	}
}

func TestApplyInstallUpgradeNoop(t *testing.T) {
	f := newFakeHelm(t)
	dir := tinyChart(t)
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: dir} })

	mustApply(t, f, spec, ApplyResult{Installed, 1})
	mustApply(t, f, spec, ApplyResult{Unchanged, 1})

	// ExtraValues given with Go ints compare equal to what Helm stored (JSON numbers).
	spec.ExtraValues = map[string]any{"controlPlane": map[string]any{"statefulSet": map[string]any{
		"highAvailability": map[string]any{"replicas": 1},
	}}}
	mustApply(t, f, spec, ApplyResult{Upgraded, 2})
	mustApply(t, f, spec, ApplyResult{Unchanged, 2})

	spec.Pool = "h100"
	mustApply(t, f, spec, ApplyResult{Upgraded, 3})
	equalRevisions(t, f, map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusSuperseded, 3: release.StatusDeployed})

	// The stored values are exactly the new ones, not merged with the old.
	last, err := f.store.Last("fraud")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(last.Manifest, `{\"gpuvc.dev/pool\":\"h100\"}`) {
		t.Errorf("manifest does not show the new pool:\n%s", last.Manifest)
	}
}

func TestApplyUpgradesOnChartChange(t *testing.T) {
	f := newFakeHelm(t)
	dir := tinyChart(t)
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: dir} })
	mustApply(t, f, spec, ApplyResult{Installed, 1})

	// Same values, edited template: a new revision.
	p := filepath.Join(dir, "templates", "cm.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(b, "  edited: \"yes\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	mustApply(t, f, spec, ApplyResult{Upgraded, 2})

	// Same directory under another version: the image tag changes, so do values.
	spec.Chart.Version = "0.36.0"
	mustApply(t, f, spec, ApplyResult{Upgraded, 3})
	mustApply(t, f, spec, ApplyResult{Unchanged, 3})
}

func TestApplyRetriesAfterFailedInstall(t *testing.T) {
	f := newFakeHelm(t)
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
	// An install that errored half-way leaves a failed first revision.
	storeRelease(t, f, 1, release.StatusFailed, f.clock.Now())

	mustApply(t, f, spec, ApplyResult{Upgraded, 2})
	equalRevisions(t, f, map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed})
	mustApply(t, f, spec, ApplyResult{Unchanged, 2})
}

func TestApplyRetriesFailedUpgradeEvenWithSameValues(t *testing.T) {
	f := newFakeHelm(t)
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
	mustApply(t, f, spec, ApplyResult{Installed, 1})

	spec.Pool = "h100"
	f.kube.UpdateError = errors.New("etcdserver: request timed out")
	if _, err := f.Apply(context.Background(), spec); err == nil {
		t.Fatal("want the upgrade error")
	}
	f.kube.UpdateError = nil
	mustApply(t, f, spec, ApplyResult{Upgraded, 3})
	equalRevisions(t, f, map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusFailed, 3: release.StatusDeployed})
}

// storeRelease records a revision as an interrupted process would have left it.
func storeRelease(t *testing.T, f *fakeHelm, version int, status release.Status, at time.Time) {
	t.Helper()
	rel := &release.Release{
		Name: "fraud", Namespace: "team-fraud", Version: version,
		Info: &release.Info{Status: status, LastDeployed: helmtime.Time{Time: at}, Deleted: helmtime.Time{Time: at}},
	}
	if err := f.store.Create(rel); err != nil {
		t.Fatal(err)
	}
}

func TestApplyRecoversStalePending(t *testing.T) {
	for _, status := range []release.Status{release.StatusPendingInstall, release.StatusPendingUpgrade, release.StatusPendingRollback} {
		t.Run(string(status), func(t *testing.T) {
			f := newFakeHelm(t)
			spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
			storeRelease(t, f, 1, status, f.clock.Now())

			// Young: someone may still be at it.
			f.clock.Step(DefaultStaleAfter - time.Second)
			_, err := f.Apply(context.Background(), spec)
			if !errors.Is(err, ErrOperationInProgress) {
				t.Fatalf("want ErrOperationInProgress, got %v", err)
			}
			equalRevisions(t, f, map[int]release.Status{1: status})

			// Stale: taken as interrupted, marked failed, upgraded over (which
			// supersedes it).
			f.clock.Step(time.Second)
			mustApply(t, f, spec, ApplyResult{Upgraded, 2})
			equalRevisions(t, f, map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed})
			old, err := f.store.Get("fraud", 1)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(old.Info.Description, "gpuvc: marked failed") {
				t.Errorf("revision 1 description = %q, want it to say gpuvc marked it failed", old.Info.Description)
			}
		})
	}
}

// A release a killed manager left pending or uninstalling is recovered as soon
// as a new manager acts alone, not after the stale-after duration; one this
// process began is still waited for (found by e2e/faults: SIGKILL during a
// team's install left it half-created for ten minutes).
func TestApplyRecoversWhatAGoneProcessLeft(t *testing.T) {
	for _, status := range []release.Status{release.StatusPendingInstall, release.StatusPendingUpgrade, release.StatusUninstalling} {
		t.Run(string(status), func(t *testing.T) {
			f := newFakeHelm(t)
			spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
			storeRelease(t, f, 1, status, f.clock.Now()) // by the killed manager
			var alone time.Time
			f.aloneSince = func() time.Time { return alone }

			// Not acting alone yet (not elected): the old rule.
			f.clock.Step(2 * time.Second)
			if _, err := f.Apply(context.Background(), spec); !errors.Is(err, ErrOperationInProgress) {
				t.Fatalf("want ErrOperationInProgress before acting alone, got %v", err)
			}
			// Elected two seconds after the operation began: recovered at once.
			alone = f.clock.Now()
			if _, err := f.Apply(context.Background(), spec); err != nil {
				t.Fatalf("want the release recovered, got %v", err)
			}
			rev := f.revisions(t)
			if last := rev[len(rev)]; last != release.StatusDeployed {
				t.Fatalf("revisions %v, want the last deployed", rev)
			}
		})
	}
	t.Run("begun by this process", func(t *testing.T) {
		f := newFakeHelm(t)
		spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
		alone := f.clock.Now()
		f.aloneSince = func() time.Time { return alone }
		storeRelease(t, f, 1, release.StatusPendingInstall, f.clock.Now().Add(500*time.Millisecond))
		f.clock.Step(time.Second)
		if _, err := f.Apply(context.Background(), spec); !errors.Is(err, ErrOperationInProgress) {
			t.Fatalf("want ErrOperationInProgress for this process's own operation, got %v", err)
		}
	})
}

func TestApplyFinishesStaleUninstall(t *testing.T) {
	f := newFakeHelm(t)
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
	storeRelease(t, f, 1, release.StatusUninstalling, f.clock.Now())

	_, err := f.Apply(context.Background(), spec)
	if !errors.Is(err, ErrOperationInProgress) {
		t.Fatalf("want ErrOperationInProgress, got %v", err)
	}
	f.clock.Step(DefaultStaleAfter)
	mustApply(t, f, spec, ApplyResult{Installed, 1})
	equalRevisions(t, f, map[int]release.Status{1: release.StatusDeployed})
}

func TestApplyReinstallsOverKeptHistory(t *testing.T) {
	f := newFakeHelm(t)
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
	storeRelease(t, f, 1, release.StatusUninstalled, f.clock.Now())
	mustApply(t, f, spec, ApplyResult{Installed, 2})
	equalRevisions(t, f, map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed})
}

func TestApplyInvalidSpec(t *testing.T) {
	f := newFakeHelm(t)
	_, err := f.Apply(context.Background(), makeSpec(func(s *Spec) { s.KubeconfigServer = "" }))
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "KubeconfigServer") {
		t.Fatalf("want ErrInvalidSpec naming KubeconfigServer, got %v", err)
	}
	equalRevisions(t, f, map[int]release.Status{})
}

func TestApplyRefusesAnotherChart(t *testing.T) {
	f := newFakeHelm(t)
	dir := tinyChart(t)
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: nginx\nversion: 1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := f.Apply(context.Background(), makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: dir} }))
	if err == nil || !strings.Contains(err.Error(), `holds chart "nginx", not "vcluster"`) {
		t.Fatalf("want a wrong-chart error, got %v", err)
	}
}

func TestUninstallIdempotent(t *testing.T) {
	f := newFakeHelm(t)
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
	if err := f.Uninstall(context.Background(), spec); err != nil {
		t.Fatalf("uninstalling an absent release: %v", err)
	}
	mustApply(t, f, spec, ApplyResult{Installed, 1})
	mustApply(t, f, makeSpec(func(s *Spec) { s.Chart = spec.Chart; s.Pool = "h100" }), ApplyResult{Upgraded, 2})
	if err := f.Uninstall(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	equalRevisions(t, f, map[int]release.Status{})
	if err := f.Uninstall(context.Background(), spec); err != nil {
		t.Fatalf("second uninstall: %v", err)
	}
	// A spec that no longer validates can still be removed.
	broken := spec
	broken.Chart = ChartSource{Dir: "/gone"}
	if err := f.Uninstall(context.Background(), broken); err != nil {
		t.Fatalf("uninstall with an unusable chart source: %v", err)
	}
}

func TestMaxHistoryBoundsRevisions(t *testing.T) {
	f := newFakeHelm(t)
	f.maxHistory = 3
	spec := makeSpec(func(s *Spec) { s.Chart = ChartSource{Dir: tinyChart(t)} })
	mustApply(t, f, spec, ApplyResult{Installed, 1})
	for i, pool := range []string{"p1", "p2", "p3", "p4"} {
		spec.Pool = pool
		mustApply(t, f, spec, ApplyResult{Upgraded, i + 2})
	}
	if got := len(f.revisions(t)); got != 3 {
		t.Errorf("%d revisions kept, want 3", got)
	}
}
