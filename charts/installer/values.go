package installer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/gpuvc/gpuvc/charts"
)

// ValueSources are chart values as given on the command line. Merge combines them
// exactly as Helm does: -f files in order (later files win, maps merge deeply), then
// --set-json, --set and --set-string, each overriding what came before.
type ValueSources struct {
	Files     []string // -f/--values: a path, an http(s) URL, or - for stdin
	Set       []string // --set KEY=VALUE[,KEY=VALUE]: values typed as YAML would
	SetString []string // --set-string KEY=VALUE: values kept as strings
	SetJSON   []string // --set-json KEY=JSON
}

// valueGetters read -f URLs; plain paths are read from disk by Helm itself.
var valueGetters = getter.Providers{{Schemes: []string{"http", "https"}, New: getter.NewHTTPGetter}}

// Merge returns the user values. An error names the flag and the entry at fault.
func (s ValueSources) Merge() (map[string]any, error) {
	opts := values.Options{ValueFiles: s.Files, JSONValues: s.SetJSON, Values: s.Set, StringValues: s.SetString}
	vals, err := opts.MergeValues(valueGetters)
	if err == nil {
		return vals, nil
	}
	return nil, s.culprit(err)
}

// culprit finds the one entry Helm's merge failed on by trying each alone (Helm's
// messages for --set-json and file reads do not say which entry, or which flag).
func (s ValueSources) culprit(merged error) error {
	for _, f := range s.Files {
		if _, err := (&values.Options{ValueFiles: []string{f}}).MergeValues(valueGetters); err != nil {
			return fmt.Errorf("-f/--values %q: %v (want a YAML file of chart values, e.g. manager: {replicas: 1})", f, err)
		}
	}
	flags := []struct {
		name    string
		entries []string
		parse   func(string, map[string]any) error
		want    string
	}{
		{"--set-json", s.SetJSON, strvals.ParseJSON, `KEY=JSON, e.g. --set-json 'manager.tolerations=[{"operator":"Exists"}]'`},
		{"--set", s.Set, strvals.ParseInto, "KEY=VALUE[,KEY=VALUE], e.g. --set manager.replicas=1"},
		{"--set-string", s.SetString, strvals.ParseIntoString, "KEY=VALUE, e.g. --set-string image.tag=0.1.0"},
	}
	for _, f := range flags {
		for _, e := range f.entries {
			if err := f.parse(e, map[string]any{}); err != nil {
				return fmt.Errorf("%s %q: %v (want %s)", f.name, e, err, f.want)
			}
		}
	}
	return fmt.Errorf("merging the values of -f and --set: %v", merged)
}

// Check validates user values against the embedded chart (see CheckValues).
func Check(vals map[string]any) error {
	ch, err := charts.Chart()
	if err != nil {
		return err
	}
	return CheckValues(ch, vals)
}

// CheckValues validates values against the chart's values.schema.json after merging
// them over the chart's defaults, as Helm does before rendering. It returns a
// *ValuesError naming each key at fault, so no cluster is needed to find a typo.
func CheckValues(ch *chart.Chart, vals map[string]any) error {
	_, err := checkValues(ch, vals)
	return err
}

// ValuesError lists the values the chart's schema refused.
type ValuesError struct {
	Problems []ValueProblem
	raw      string // Helm's message, shown when it cannot be parsed
}

// ValueProblem is one refusal: the key as --set spells it (manager.replicas,
// tolerations[0].effect; "" for the top level), the value there when it is a
// scalar, and the schema's message.
type ValueProblem struct {
	Key      string
	Value    any
	HasValue bool
	Message  string
	Depth    int // nesting of the schema's explanation (0: a problem of its own)
}

func (e *ValuesError) Error() string {
	var b strings.Builder
	b.WriteString("invalid chart values (from -f/--values or --set):")
	if len(e.Problems) == 0 {
		b.WriteString("\n" + strings.TrimSpace(e.raw))
	}
	for _, p := range e.Problems {
		b.WriteString("\n" + strings.Repeat("  ", p.Depth+1) + "- ")
		switch {
		case p.Key == "":
			b.WriteString("(top level)")
		case p.HasValue:
			b.WriteString(p.Key + "=" + formatValue(p.Value))
		default:
			b.WriteString(p.Key)
		}
		b.WriteString(": " + p.Message)
	}
	b.WriteString("\nfix the key or value in your values file or --set flag; the chart's keys are described in docs/chart.md (Values)")
	return b.String()
}

// schemaLine is one line of jsonschema's message as Helm passes it on:
// "- at '/manager/replicas': got string, want integer", indented two spaces per level.
var schemaLine = regexp.MustCompile(`^(\s*)- at '((?:[^'\\]|\\.)*)': (.*)$`)

func newValuesError(msg string, vals map[string]any) *ValuesError {
	e := &ValuesError{raw: msg}
	var skipped []int // depths of "validation failed" lines: their causes move up
	for _, line := range strings.Split(msg, "\n") {
		m := schemaLine.FindStringSubmatch(line)
		if m == nil {
			continue // the chart's name ("gpuvc:") and blank lines
		}
		depth := len(m[1]) / 2
		for len(skipped) > 0 && skipped[len(skipped)-1] >= depth {
			skipped = skipped[:len(skipped)-1]
		}
		if m[3] == "validation failed" {
			skipped = append(skipped, depth)
			continue
		}
		key, value, ok := lookup(vals, strings.ReplaceAll(m[2], `\'`, `'`))
		e.Problems = append(e.Problems, ValueProblem{Key: key, Value: value, HasValue: ok, Message: m[3], Depth: depth - len(skipped)})
	}
	return e
}

// lookup turns a JSON pointer into a --set key and returns the value found there
// when it is a scalar (maps and lists would only clutter the message).
func lookup(vals map[string]any, pointer string) (key string, value any, scalar bool) {
	if pointer == "" {
		return "", nil, false
	}
	var cur any = vals
	found := true
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		if list, ok := cur.([]any); ok {
			key += "[" + tok + "]"
			i, err := strconv.Atoi(tok)
			if found = err == nil && i >= 0 && i < len(list); found {
				cur = list[i]
			} else {
				cur = nil
			}
			continue
		}
		if key != "" {
			key += "."
		}
		key += strings.ReplaceAll(tok, ".", `\.`)
		m, ok := cur.(map[string]any)
		if !ok {
			cur, found = nil, false
			continue
		}
		cur, found = m[tok]
	}
	if !found {
		return key, nil, false
	}
	switch cur.(type) {
	case map[string]any, []any:
		return key, nil, false
	}
	return key, cur, true
}

func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Overlay returns over merged on top of base, as Helm merges -f files (over
// wins, maps merge deeply); it changes neither.
func Overlay(base, over map[string]any) map[string]any {
	return chartutil.CoalesceTables(copyValues(over), copyValues(base))
}

// copyValues deep-copies a values tree (CoalesceTables changes its arguments).
func copyValues(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		if m, ok := x.(map[string]any); ok {
			x = copyValues(m)
		}
		out[k] = x
	}
	return out
}
