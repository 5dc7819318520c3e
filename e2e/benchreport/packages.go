package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
)

// listed is what `go list -json` says of a package, in the fields used here.
type listed struct {
	ImportPath   string
	Dir          string
	TestGoFiles  []string
	XTestGoFiles []string
}

// benchmarkPackages returns the import paths of the packages matching
// patterns whose test files declare at least one Benchmark function. Packages
// without one are left out: their TestMain (an end-to-end suite's backend, a
// control plane) would run for nothing under -run '^$'.
func benchmarkPackages(dir string, patterns ...string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"list", "-json"}, patterns...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.String())
	}
	var pkgs []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("reading go list output: %w", err)
		}
		has, err := declaresBenchmark(p.Dir, append(p.TestGoFiles, p.XTestGoFiles...))
		if err != nil {
			return nil, err
		}
		if has {
			pkgs = append(pkgs, p.ImportPath)
		}
	}
	return pkgs, nil
}

// declaresBenchmark reports whether any of the files has a top-level
// func BenchmarkXxx(*testing.B).
func declaresBenchmark(dir string, files []string) (bool, error) {
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && isBenchmarkName(fn.Name.Name) && fn.Type.Params.NumFields() == 1 {
				return true, nil
			}
		}
	}
	return false, nil
}

// isBenchmarkName follows go test's rule: "Benchmark" then nothing or a
// character that is not a lower-case letter.
func isBenchmarkName(name string) bool {
	rest, ok := strings.CutPrefix(name, "Benchmark")
	return ok && (rest == "" || !(rest[0] >= 'a' && rest[0] <= 'z'))
}
