package vclusters

import (
	"bytes"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
)

// sameRelease tells whether rel already has chart ch with values vals. Both sides go
// through JSON, the form Helm stores releases in, so a release read back compares
// equal to what was installed.
func sameRelease(rel *release.Release, ch *chart.Chart, vals map[string]any) (bool, error) {
	if rel.Chart == nil {
		return false, nil
	}
	have, err := chartFingerprint(rel.Chart)
	if err != nil {
		return false, err
	}
	want, err := chartFingerprint(ch)
	if err != nil {
		return false, err
	}
	if !bytes.Equal(have, want) {
		return false, nil
	}
	haveVals, err := json.Marshal(rel.Config)
	if err != nil {
		return false, fmt.Errorf("encoding the values of revision %d: %w", rel.Version, err)
	}
	wantVals, err := json.Marshal(vals)
	if err != nil {
		return false, err
	}
	return bytes.Equal(haveVals, wantVals), nil
}

// chartFingerprint is the content of a chart that decides what gets rendered:
// metadata, templates, default values, schema and files (encoding/json sorts map
// keys, so it is deterministic).
func chartFingerprint(ch *chart.Chart) ([]byte, error) {
	return json.Marshal(struct {
		Metadata  *chart.Metadata
		Templates []*chart.File
		Values    map[string]any
		Schema    []byte
		Files     []*chart.File
	}{ch.Metadata, ch.Templates, ch.Values, ch.Schema, ch.Files})
}
