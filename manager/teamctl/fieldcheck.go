package teamctl

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// checkFields walks a decoded JSON document (maps, lists, json.Number...) against
// the Go type it should fill, by the type's json tags, and returns one problem per
// unknown field or wrong value, each naming the field path. Deriving the allowed
// fields from the type means a new API field needs no change here.
func checkFields(doc any, t reflect.Type) []string {
	var problems []string
	walk(doc, t, "", &problems)
	return problems
}

var (
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	quantityType    = reflect.TypeOf(resource.Quantity{})
)

func walk(v any, t reflect.Type, path string, problems *[]string) {
	if v == nil { // null leaves a field at its zero value, as json does
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	add := func(format string, args ...any) {
		*problems = append(*problems, pathOrRoot(path)+": "+fmt.Sprintf(format, args...))
	}
	// Types that decode themselves (Quantity, Time, free-form JSON) are leaves: ask them.
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		raw, _ := json.Marshal(v)
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			if t == quantityType {
				add("%s is not a quantity (e.g. 64, 500m, 256Gi)", show(v))
				return
			}
			add("%s: %v", show(v), err)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			add("%s, want an object", describeValue(v))
			return
		}
		fields := jsonFields(t)
		for _, key := range slices.Sorted(maps.Keys(m)) {
			ft, known := fields[key]
			if !known {
				msg := "unknown field"
				if s := closest(key, fields); s != "" {
					msg += "; did you mean " + s + "?"
				}
				*problems = append(*problems, join(path, key)+": "+msg)
				continue
			}
			walk(m[key], ft, join(path, key), problems)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			add("%s, want an object", describeValue(v))
			return
		}
		for _, key := range slices.Sorted(maps.Keys(m)) {
			walk(m[key], t.Elem(), path+"["+key+"]", problems)
		}
	case reflect.Slice, reflect.Array:
		l, ok := v.([]any)
		if !ok {
			add("%s, want a list", describeValue(v))
			return
		}
		for i, item := range l {
			walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), problems)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			add("%s, want a string (quote it: \"%v\")", describeValue(v), v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			add("%s, want true or false", describeValue(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			add("%s, want an integer", describeValue(v))
			return
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			if strings.ContainsAny(n.String(), ".eE") {
				add("%s is not a whole number", n)
			} else {
				add("%s is out of range (%d bits)", n, t.Bits())
			}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			add("%s, want a non-negative integer", describeValue(v))
			return
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			add("%s is not a non-negative integer of %d bits", n, t.Bits())
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			add("%s, want a number", describeValue(v))
		}
	case reflect.Interface:
		// anything goes
	}
}

// jsonFields maps each json field name of a struct to its type, flattening
// embedded structs without a name (`json:",inline"`) as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					fields[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// closest is the known field a typo most likely meant: same letters in another
// case, or at most two edits away (one for short names), a longer or shorter form
// (gpu → gpus) winning a tie; "" when no single field is obvious.
func closest(key string, fields map[string]reflect.Type) string {
	limit := 3
	if len(key) <= 4 {
		limit = 2
	}
	best, bestScore, tie := "", 2*limit, false
	for name := range fields {
		k, n := strings.ToLower(key), strings.ToLower(name)
		score := 2 * editDistance(k, n)
		if score > 0 && (strings.HasPrefix(n, k) || strings.HasPrefix(k, n)) {
			score--
		}
		switch {
		case score < bestScore:
			best, bestScore, tie = name, score, false
		case score == bestScore && best != "":
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// describeValue says what a value is, for "…, want X" messages.
func describeValue(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	default:
		return show(v) + " is a " + kindOf(v)
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// show prints a scalar as the user wrote it: strings quoted, numbers plain.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprint(v)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func pathOrRoot(path string) string {
	if path == "" {
		return "document"
	}
	return path
}
