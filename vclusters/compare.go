package vclusters

import (
	"encoding/json"

	"helm.sh/helm/v3/pkg/chart"
)

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
