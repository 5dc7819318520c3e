package vclusters

import (
	"os"
	"path/filepath"
	"testing"
)

func TestChartSourceValidate(t *testing.T) {
	chartDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(chartDir, "Chart.yaml"), []byte("name: vcluster\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		src     ChartSource
		wantErr []string
	}{
		"zero value is the published chart": {src: ChartSource{}},
		"repository with version":           {src: ChartSource{RepoURL: "https://charts.example.com/vc", Name: "vcluster", Version: "0.36.0"}},
		"OCI":                               {src: ChartSource{OCI: "oci://registry.example.com:5000/charts/vcluster", PlainHTTP: true}},
		"directory":                         {src: ChartSource{Dir: chartDir}},
		"two sources": {src: ChartSource{RepoURL: "https://a.example", Dir: chartDir},
			wantErr: []string{"only one of RepoURL, OCI and Dir"}},
		"version range": {src: ChartSource{Version: ">=0.36.0"}, wantErr: []string{"exact semantic version"}},
		"v prefix":      {src: ChartSource{Version: "v0.36.1"}, wantErr: []string{"exact semantic version"}},
		"repository not http": {src: ChartSource{RepoURL: "ftp://charts.example.com"},
			wantErr: []string{"http(s) URL"}},
		"OCI without scheme": {src: ChartSource{OCI: "ghcr.io/loft-sh/vcluster"}, wantErr: []string{"oci://"}},
		"OCI with tag": {src: ChartSource{OCI: "oci://ghcr.io/loft-sh/vcluster:0.36.1"},
			wantErr: []string{"must not carry a tag"}},
		"OCI with digest": {src: ChartSource{OCI: "oci://ghcr.io/loft-sh/vcluster@sha256:abc"},
			wantErr: []string{"must not carry a tag or digest"}},
		"OCI without path": {src: ChartSource{OCI: "oci://ghcr.io"}, wantErr: []string{"oci://<registry>/<path>/<chart>"}},
		"name with OCI": {src: ChartSource{OCI: "oci://ghcr.io/x/vcluster", Name: "vcluster"},
			wantErr: []string{"Name applies to RepoURL only"}},
		"dir without chart": {src: ChartSource{Dir: t.TempDir()}, wantErr: []string{"is not a chart directory"}},
		"plain HTTP for a repository": {src: ChartSource{PlainHTTP: true},
			wantErr: []string{"PlainHTTP applies to OCI only"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			requireValidation(t, tc.src.Validate(), tc.wantErr)
		})
	}
}

func TestChartSourceString(t *testing.T) {
	cases := map[string]struct {
		src  ChartSource
		want string
	}{
		"default":   {ChartSource{}, "chart vcluster 0.36.1 from https://charts.loft.sh"},
		"OCI":       {ChartSource{OCI: "oci://r.example/c/vcluster", Version: "0.36.0"}, "oci://r.example/c/vcluster:0.36.0"},
		"directory": {ChartSource{Dir: "/charts/vcluster"}, "chart directory /charts/vcluster (as version 0.36.1)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.src.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
