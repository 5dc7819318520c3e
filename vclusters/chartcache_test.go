package vclusters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// A published version is downloaded once per Client, also when several Teams
// load it at the same time; the index is not consulted again either.
func TestChartCacheDownloadsOnce(t *testing.T) {
	ch, err := loader.LoadDir(tinyChart(t))
	if err != nil {
		t.Fatal(err)
	}
	ch.Metadata.Version = DefaultChartVersion
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/index.yaml":
			idx := repo.NewIndexFile()
			if err := idx.MustAdd(ch.Metadata, "vcluster-0.36.1.tgz", srv.URL, ""); err != nil {
				t.Error(err)
			}
			b, _ := yaml.Marshal(idx)
			_, _ = w.Write(b)
		case "/vcluster-0.36.1.tgz":
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	// Teams reconciled at once load it together, then again.
	var cache chartCache
	src := ChartSource{RepoURL: srv.URL}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := cache.load(context.Background(), src)
			if err != nil {
				t.Error(err)
				return
			}
			if got.Metadata.Version != "0.36.1" || len(got.Templates) != 1 {
				t.Errorf("load %d: got chart %s with %d templates", i, got.Metadata.Version, len(got.Templates))
			}
		}()
	}
	wg.Wait()
	if _, err := cache.load(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests for nine loads, eight at once, want 2 (index and archive once)", n)
	}
}
