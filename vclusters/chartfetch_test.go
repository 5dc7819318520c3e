package vclusters_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/vclusters"
)

// packagedChart is the module's chart packaged as a published 0.36.1 archive.
func packagedChart(t *testing.T) (archive []byte, metadata []byte) {
	t.Helper()
	ch, err := loader.LoadDir(moduleChart(t).Dir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Metadata.Version = vclusters.DefaultChartVersion
	path, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if archive, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if metadata, err = json.Marshal(ch.Metadata); err != nil {
		t.Fatal(err)
	}
	return archive, metadata
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// chartRepo serves index.yaml and the archive over TLS behind basic auth, the way
// a published chart repository does.
type chartRepo struct {
	srv    *httptest.Server
	caFile string
	digest string // what index.yaml claims
}

func newChartRepo(t *testing.T, archive []byte) *chartRepo {
	t.Helper()
	r := &chartRepo{digest: sha256Hex(archive)}
	mux := http.NewServeMux()
	mux.HandleFunc("/charts/index.yaml", func(w http.ResponseWriter, req *http.Request) {
		idx := repo.NewIndexFile()
		if err := idx.MustAdd(mustMetadata(t), "vcluster-0.36.1.tgz", r.srv.URL+"/charts", "sha256:"+r.digest); err != nil {
			t.Error(err)
		}
		b, _ := yaml.Marshal(idx)
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/charts/vcluster-0.36.1.tgz", func(w http.ResponseWriter, req *http.Request) {
		_, _ = w.Write(archive)
	})
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != "team" || p != "secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	if err := os.WriteFile(r.caFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return r
}

func mustMetadata(t *testing.T) *chart.Metadata {
	ch, err := loader.LoadDir(moduleChart(t).Dir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Metadata.Version = vclusters.DefaultChartVersion
	return ch.Metadata
}

func renderErr(t *testing.T, src vclusters.ChartSource) (string, error) {
	t.Helper()
	return vclusters.Render(context.Background(), teamSpec(t, func(s *vclusters.Spec) { s.Chart = src }))
}

func TestChartFromRepository(t *testing.T) {
	archive, _ := packagedChart(t)
	r := newChartRepo(t, archive)
	src := vclusters.ChartSource{RepoURL: r.srv.URL + "/charts", Username: "team", Password: "secret", CAFile: r.caFile}

	manifest, err := renderErr(t, src)
	if err != nil {
		t.Fatalf("rendering the chart from the repository: %v", err)
	}
	if !strings.Contains(manifest, "ghcr.io/loft-sh/vcluster-oss:0.36.1") {
		t.Error("rendered manifest lacks the control-plane image")
	}

	cases := map[string]struct {
		mutate func(*vclusters.ChartSource)
		setup  func()
		want   string
	}{
		"unknown version": {mutate: func(s *vclusters.ChartSource) { s.Version = "0.36.2" },
			want: "the repository index has no vcluster version 0.36.2"},
		"unknown chart": {mutate: func(s *vclusters.ChartSource) { s.Name = "vcluster-pro" },
			want: "the repository index has no vcluster-pro version 0.36.1"},
		"wrong password": {mutate: func(s *vclusters.ChartSource) { s.Password = "guess" }, want: "401"},
		"untrusted server": {mutate: func(s *vclusters.ChartSource) { s.CAFile = "" },
			want: "certificate"},
		"archive does not match the index digest": {setup: func() { r.digest = sha256Hex([]byte("other")) },
			want: "the index says sha256:" + sha256Hex([]byte("other"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := src
			if tc.mutate != nil {
				tc.mutate(&s)
			}
			if tc.setup != nil {
				old := r.digest
				tc.setup()
				defer func() { r.digest = old }()
			}
			_, err := renderErr(t, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// fakeRegistry serves one chart artifact the way an OCI distribution registry does:
// /v2/, manifests by tag or digest, blobs by digest.
func fakeRegistry(t *testing.T, repoPath, tag string, archive, config []byte) *httptest.Server {
	t.Helper()
	blobs := map[string][]byte{"sha256:" + sha256Hex(archive): archive, "sha256:" + sha256Hex(config): config}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.cncf.helm.config.v1+json",
			"digest": "sha256:" + sha256Hex(config), "size": len(config)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
			"digest": "sha256:" + sha256Hex(archive), "size": len(archive)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	manifestDigest := "sha256:" + sha256Hex(manifest)
	serve := func(w http.ResponseWriter, req *http.Request, body []byte, mediaType, digest string) {
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Docker-Content-Digest", digest)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if req.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := req.URL.Path
		switch {
		case p == "/v2/":
			w.WriteHeader(http.StatusOK)
		case p == "/v2/"+repoPath+"/manifests/"+tag || p == "/v2/"+repoPath+"/manifests/"+manifestDigest:
			serve(w, req, manifest, "application/vnd.oci.image.manifest.v1+json", manifestDigest)
		case strings.HasPrefix(p, "/v2/"+repoPath+"/blobs/"):
			d := strings.TrimPrefix(p, "/v2/"+repoPath+"/blobs/")
			b, ok := blobs[d]
			if !ok {
				http.NotFound(w, req)
				return
			}
			serve(w, req, b, "application/octet-stream", d)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestChartFromOCI(t *testing.T) {
	archive, config := packagedChart(t)
	srv := fakeRegistry(t, "charts/vcluster", "0.36.1", archive, config)
	host := strings.TrimPrefix(srv.URL, "http://")
	src := vclusters.ChartSource{OCI: "oci://" + host + "/charts/vcluster", PlainHTTP: true}

	manifest, err := renderErr(t, src)
	if err != nil {
		t.Fatalf("rendering the chart from the registry: %v", err)
	}
	if !strings.Contains(manifest, "ghcr.io/loft-sh/vcluster-oss:0.36.1") {
		t.Error("rendered manifest lacks the control-plane image")
	}

	src.Version = "0.36.0"
	_, err = renderErr(t, src)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("oci://%s/charts/vcluster:0.36.0", host)) {
		t.Fatalf("want an error naming the missing tag, got %v", err)
	}
}
