package mig

import (
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func mustLookup(t testing.TB, name string) *Model {
	t.Helper()
	m, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// layoutOf is shorthand for a GPU's instances: "3g.20gb@4", ...
func layoutOf(t testing.TB, specs ...string) []Instance {
	t.Helper()
	var out []Instance
	for _, s := range specs {
		name, start, ok := strings.Cut(s, "@")
		if !ok || len(start) != 1 {
			t.Fatalf("bad instance spec %q", s)
		}
		out = append(out, Instance{Profile: name, Start: int(start[0] - '0')})
	}
	return out
}
