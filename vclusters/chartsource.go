package vclusters

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Where the vCluster chart is published, and the version gpuvc is built and tested
// against. The chart version is also the vCluster version (the image tag).
const (
	DefaultRepoURL      = "https://charts.loft.sh"
	DefaultChartName    = "vcluster"
	DefaultChartVersion = "0.36.1"
)

// ChartSource says where the vCluster chart comes from: a published chart
// repository (the default), an OCI registry, or an unpacked chart directory. At most
// one of RepoURL, OCI and Dir is set; none means DefaultRepoURL.
type ChartSource struct {
	// RepoURL is a chart repository serving index.yaml, e.g. https://charts.loft.sh.
	RepoURL string
	// Name is the chart's name in RepoURL. Empty: DefaultChartName.
	Name string
	// OCI is a chart reference without tag, e.g. oci://registry.example/charts/vcluster;
	// Version is the tag.
	OCI string
	// Dir is an unpacked chart, e.g. chart/ of the vCluster Go module. Its Chart.yaml
	// carries a placeholder version, so Version replaces it.
	Dir string
	// Version is the exact chart (and vCluster) version. Empty: DefaultChartVersion.
	Version string

	// Username and Password authenticate to RepoURL or the OCI registry.
	Username, Password string
	// CAFile verifies the server's certificate; InsecureSkipTLSVerify skips that.
	CAFile                string
	InsecureSkipTLSVerify bool
	// PlainHTTP talks to the OCI registry over http (a registry inside the cluster).
	PlainHTTP bool
}

func (c ChartSource) version() string {
	if c.Version != "" {
		return c.Version
	}
	return DefaultChartVersion
}

func (c ChartSource) repoURL() string {
	if c.RepoURL != "" {
		return c.RepoURL
	}
	return DefaultRepoURL
}

func (c ChartSource) chartName() string {
	if c.Name != "" {
		return c.Name
	}
	return DefaultChartName
}

// kind names the source for messages and for deciding how to load it.
func (c ChartSource) kind() string {
	switch {
	case c.Dir != "":
		return "directory"
	case c.OCI != "":
		return "OCI"
	default:
		return "repository"
	}
}

// String names the chart for messages: where it comes from and its version.
func (c ChartSource) String() string {
	switch c.kind() {
	case "directory":
		return fmt.Sprintf("chart directory %s (as version %s)", c.Dir, c.version())
	case "OCI":
		return fmt.Sprintf("%s:%s", c.OCI, c.version())
	default:
		return fmt.Sprintf("chart %s %s from %s", c.chartName(), c.version(), c.repoURL())
	}
}

// Validate reports what makes the source unusable, without touching the network.
func (c ChartSource) Validate() error {
	var errs []error
	set := 0
	for _, s := range []string{c.RepoURL, c.OCI, c.Dir} {
		if s != "" {
			set++
		}
	}
	if set > 1 {
		errs = append(errs, errors.New("set only one of RepoURL, OCI and Dir"))
	}
	// An exact version: the image tag follows it, and "unchanged" must mean unchanged.
	if _, err := semver.StrictNewVersion(c.version()); err != nil {
		errs = append(errs, fmt.Errorf("Version %q must be an exact semantic version such as %s", c.version(), DefaultChartVersion))
	}
	if c.Name != "" && (c.OCI != "" || c.Dir != "") {
		errs = append(errs, errors.New("Name applies to RepoURL only (the OCI reference and the directory name the chart)"))
	}
	switch c.kind() {
	case "repository":
		if u, err := url.Parse(c.repoURL()); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("RepoURL %q must be an http(s) URL", c.RepoURL))
		}
	case "OCI":
		errs = append(errs, validateOCIRef(c.OCI))
	case "directory":
		if _, err := os.Stat(filepath.Join(c.Dir, "Chart.yaml")); err != nil {
			errs = append(errs, fmt.Errorf("Dir %q is not a chart directory: %v", c.Dir, err))
		}
	}
	if c.PlainHTTP && c.OCI == "" {
		errs = append(errs, errors.New("PlainHTTP applies to OCI only (RepoURL says http or https itself)"))
	}
	return errors.Join(errs...)
}

func validateOCIRef(ref string) error {
	rest, ok := strings.CutPrefix(ref, "oci://")
	if !ok {
		return fmt.Errorf("OCI %q must start with oci://", ref)
	}
	host, repoPath, _ := strings.Cut(rest, "/")
	if host == "" || repoPath == "" {
		return fmt.Errorf("OCI %q must be oci://<registry>/<path>/<chart>", ref)
	}
	if strings.Contains(path.Base(repoPath), ":") || strings.Contains(repoPath, "@") {
		return fmt.Errorf("OCI %q must not carry a tag or digest: Version is the tag", ref)
	}
	return nil
}
