package vclusters

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// releaseSummary is what Apply and Ready decide by from the latest revision of
// a release: its state and hashes of what it was installed with, not the
// chart and manifest Helm stores with it.
type releaseSummary struct {
	Version      int
	Status       release.Status
	Description  string
	LastDeployed time.Time
	Deleted      time.Time
	// hasChart: the revision records its chart (ChartHash is of it).
	hasChart bool
	// ChartHash and ValuesHash: SHA-256 of chartFingerprint and of the
	// values' JSON, what sameAs compares.
	ChartHash, ValuesHash [sha256.Size]byte
}

func summarize(rel *release.Release) (releaseSummary, error) {
	s := releaseSummary{Version: rel.Version}
	if rel.Info != nil {
		s.Status, s.Description = rel.Info.Status, rel.Info.Description
		s.LastDeployed, s.Deleted = rel.Info.LastDeployed.Time, rel.Info.Deleted.Time
	}
	if rel.Chart != nil {
		fp, err := chartFingerprint(rel.Chart)
		if err != nil {
			return s, err
		}
		s.hasChart, s.ChartHash = true, sha256.Sum256(fp)
	}
	vals, err := json.Marshal(rel.Config)
	if err != nil {
		return s, fmt.Errorf("encoding the values of revision %d: %w", rel.Version, err)
	}
	s.ValuesHash = sha256.Sum256(vals)
	return s, nil
}

// sameAs tells whether the revision has chart ch with values vals.
func (s releaseSummary) sameAs(ch *chart.Chart, vals map[string]any) (bool, error) {
	if !s.hasChart {
		return false, nil
	}
	fp, err := chartFingerprint(ch)
	if err != nil {
		return false, err
	}
	if sha256.Sum256(fp) != s.ChartHash {
		return false, nil
	}
	want, err := json.Marshal(vals)
	if err != nil {
		return false, err
	}
	return sha256.Sum256(want) == s.ValuesHash, nil
}

// releaseSummaries remembers the summary of each release record (a Secret)
// by its UID and resourceVersion: a record Helm has not rewritten is not
// decoded again. Decoding is most of the cost of a Team pass that changes
// nothing — every revision's chart, gunzipped and parsed, twice a pass — and
// of a restart, which makes that pass for every team (docs/benchmarks.md).
type releaseSummaries struct {
	meta metadata.Interface // nil: no cache, Helm's own Last
	mu   sync.Mutex
	seen map[string]cachedSummary // namespace/release: its latest record
}

type cachedSummary struct {
	record          string // the Secret's name
	uid             types.UID
	resourceVersion string
	summary         releaseSummary
}

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// last returns the summary of the latest revision of release name, or
// driver.ErrReleaseNotFound; rel is the decoded revision when it had to be
// read (nil when the summary was remembered). Helm's release records are
// listed by their labels, metadata only; only a record new or rewritten since
// it was last seen is read and decoded. Storage other than Secrets (tests'
// in-memory driver) goes through Helm's Last.
func (rs *releaseSummaries) last(ctx context.Context, cfg *action.Configuration, namespace, name string) (releaseSummary, *release.Release, error) {
	secrets, ok := cfg.Releases.Driver.(*driver.Secrets)
	if rs.meta == nil || !ok {
		rel, err := cfg.Releases.Last(name)
		if err != nil {
			return releaseSummary{}, nil, err
		}
		s, err := summarize(rel)
		return s, rel, err
	}
	list, err := rs.meta.Resource(secretsResource).Namespace(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "owner=helm,name=" + name,
	})
	if err != nil {
		return releaseSummary{}, nil, fmt.Errorf("listing the revisions of release %s/%s: %w", namespace, name, err)
	}
	var latest *metav1.PartialObjectMetadata
	version := 0
	for i := range list.Items {
		v, err := strconv.Atoi(list.Items[i].Labels["version"])
		if err == nil && (latest == nil || v > version) {
			latest, version = &list.Items[i], v
		}
	}
	if latest == nil {
		return releaseSummary{}, nil, driver.ErrReleaseNotFound
	}
	key := namespace + "/" + name
	rs.mu.Lock()
	c, ok := rs.seen[key]
	rs.mu.Unlock()
	if ok && c.record == latest.Name && c.uid == latest.UID && c.resourceVersion == latest.ResourceVersion {
		return c.summary, nil, nil
	}
	rel, err := secrets.Get(latest.Name)
	if err != nil {
		return releaseSummary{}, nil, err
	}
	s, err := summarize(rel)
	if err != nil {
		return releaseSummary{}, nil, err
	}
	rs.mu.Lock()
	if rs.seen == nil {
		rs.seen = map[string]cachedSummary{}
	}
	rs.seen[key] = cachedSummary{record: latest.Name, uid: latest.UID, resourceVersion: latest.ResourceVersion, summary: s}
	rs.mu.Unlock()
	return s, rel, nil
}

// forget drops what is remembered of a release (it is being uninstalled).
func (rs *releaseSummaries) forget(namespace, name string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.seen, namespace+"/"+name)
}
