package vclusters

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
)

// downloadTimeout bounds one chart or index download.
const downloadTimeout = 2 * time.Minute

// chartCache keeps downloaded chart archives: a published version never changes,
// so each is fetched once per process. Directories are read on every load so that
// an edited chart is seen.
type chartCache struct {
	mu       sync.Mutex
	archives map[string][]byte
	// fetching: downloads under way, so Teams reconciled at once wait for one
	// download of a chart instead of each starting its own.
	fetching map[string]*fetch
}

type fetch struct {
	done    chan struct{}
	archive []byte
	err     error
}

// archive returns the cached archive of key, or downloads it once however many
// callers ask at the same time.
func (cc *chartCache) archive(key string, download func() ([]byte, error)) ([]byte, error) {
	cc.mu.Lock()
	if a, ok := cc.archives[key]; ok {
		cc.mu.Unlock()
		return a, nil
	}
	f := cc.fetching[key]
	if f == nil {
		f = &fetch{done: make(chan struct{})}
		if cc.fetching == nil {
			cc.fetching = map[string]*fetch{}
		}
		cc.fetching[key] = f
		cc.mu.Unlock()
		f.archive, f.err = download()
		cc.mu.Lock()
		delete(cc.fetching, key)
		cc.mu.Unlock()
		close(f.done)
	} else {
		cc.mu.Unlock()
		<-f.done
	}
	return f.archive, f.err
}

// load returns the chart of src, ready to install.
func (cc *chartCache) load(ctx context.Context, src ChartSource) (*chart.Chart, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if src.kind() == "directory" {
		ch, err := loader.LoadDir(src.Dir)
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", src, err)
		}
		// The vCluster module's Chart.yaml says 0.0.1: the release pipeline stamps
		// the real version, and the image tag defaults to it.
		ch.Metadata.Version = src.version()
		return checkChart(ch, src)
	}
	key := src.String()
	archive, err := cc.archive(key, func() ([]byte, error) {
		if src.kind() == "OCI" {
			return pullOCI(src)
		}
		return downloadFromRepo(src)
	})
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", src, err)
	}
	// Each load parses its own copy: Helm changes a chart while installing it
	// (dependencies, values), so Teams reconciled at once must not share one.
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", src, err)
	}
	if ch, err = checkChart(ch, src); err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if cc.archives == nil {
		cc.archives = map[string][]byte{}
	}
	cc.archives[key] = archive
	cc.mu.Unlock()
	return ch, nil
}

// checkChart refuses what is not the requested vCluster chart: the values gpuvc
// builds only fit its schema.
func checkChart(ch *chart.Chart, src ChartSource) (*chart.Chart, error) {
	if ch.Name() != DefaultChartName {
		return nil, fmt.Errorf("%s holds chart %q, not %q", src, ch.Name(), DefaultChartName)
	}
	if ch.Metadata.Version != src.version() {
		return nil, fmt.Errorf("%s holds version %s", src, ch.Metadata.Version)
	}
	return ch, nil
}

// downloadFromRepo finds the chart version in the repository's index and downloads
// its archive, checking the digest the index gives.
func downloadFromRepo(src ChartSource) ([]byte, error) {
	providers := getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}}
	r, err := repo.NewChartRepository(&repo.Entry{
		Name:                  "gpuvc-vcluster",
		URL:                   src.repoURL(),
		Username:              src.Username,
		Password:              src.Password,
		CAFile:                src.CAFile,
		InsecureSkipTLSverify: src.InsecureSkipTLSVerify,
	}, providers)
	if err != nil {
		return nil, err
	}
	// Helm writes the index to a cache folder; keep it private and short-lived.
	tmp, err := os.MkdirTemp("", "gpuvc-helm-index-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	r.CachePath = tmp
	indexPath, err := r.DownloadIndexFile()
	if err != nil {
		return nil, fmt.Errorf("reading the repository index: %w", err)
	}
	index, err := repo.LoadIndexFile(indexPath)
	if err != nil {
		return nil, fmt.Errorf("reading the repository index: %w", err)
	}
	cv, err := index.Get(src.chartName(), src.version())
	if err != nil || cv.Version != src.version() {
		return nil, fmt.Errorf("the repository index has no %s version %s", src.chartName(), src.version())
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("the repository index lists no download URL for %s %s", src.chartName(), src.version())
	}
	chartURL, err := repo.ResolveReferenceURL(src.repoURL(), cv.URLs[0])
	if err != nil {
		return nil, err
	}
	g, err := getter.NewHTTPGetter()
	if err != nil {
		return nil, err
	}
	opts := []getter.Option{
		getter.WithURL(src.repoURL()),
		getter.WithTLSClientConfig("", "", src.CAFile),
		getter.WithInsecureSkipVerifyTLS(src.InsecureSkipTLSVerify),
		getter.WithTimeout(downloadTimeout),
	}
	// Credentials go only to the repository's own host, as the helm CLI does.
	if sameHost(src.repoURL(), chartURL) {
		opts = append(opts, getter.WithBasicAuth(src.Username, src.Password))
	}
	buf, err := g.Get(chartURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", chartURL, err)
	}
	archive := buf.Bytes()
	if want := strings.TrimPrefix(cv.Digest, "sha256:"); want != "" {
		sum := sha256.Sum256(archive)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("%s has digest sha256:%s, the index says sha256:%s", chartURL, got, want)
		}
	}
	return archive, nil
}

func sameHost(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// pullOCI pulls the chart layer of <OCI>:<Version>.
func pullOCI(src ChartSource) ([]byte, error) {
	httpClient, err := registryHTTPClient(src)
	if err != nil {
		return nil, err
	}
	opts := []registry.ClientOption{registry.ClientOptHTTPClient(httpClient)}
	if src.Username != "" || src.Password != "" {
		opts = append(opts, registry.ClientOptBasicAuth(src.Username, src.Password))
	}
	if src.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	ref := strings.TrimPrefix(src.OCI, "oci://") + ":" + src.version()
	res, err := client.Pull(ref)
	if err != nil {
		return nil, err
	}
	return res.Chart.Data, nil
}

func registryHTTPClient(src ChartSource) (*http.Client, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if src.CAFile != "" || src.InsecureSkipTLSVerify {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: src.InsecureSkipTLSVerify} //nolint:gosec // only when asked for
		if src.CAFile != "" {
			pem, err := os.ReadFile(src.CAFile)
			if err != nil {
				return nil, fmt.Errorf("reading CAFile: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("CAFile %s holds no PEM certificate", src.CAFile)
			}
			cfg.RootCAs = pool
		}
		transport.TLSClientConfig = cfg
	}
	return &http.Client{Transport: transport, Timeout: downloadTimeout}, nil
}
