package testsupport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The package map in docs/architecture.md is the house's plan: one row per
// package, bottom layer first, and what each may import. These tests read it
// and hold the code to it, so the map cannot drift from the imports again.

const mapDoc = "../../docs/architecture.md"

// mapRow is one row of the package map.
type mapRow struct {
	line    int
	pattern string   // a package path relative to the module, or "dir/..." for a subtree
	allowed []string // patterns it may import; nil with anything = any package
	any     bool     // "anything": tests-only packages
	product bool     // "product": any product (non test-support) package above it
}

func (r mapRow) matches(pkg string) bool { return matchPattern(r.pattern, pkg) }

func matchPattern(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

var (
	rowPackage = regexp.MustCompile("^\\| `([a-z0-9./-]+)` \\|")
	comment    = regexp.MustCompile(`\([^)]*\)`)
	entry      = regexp.MustCompile(`^[a-z0-9-]+(/[a-z0-9-]+)*(/\.\.\.)?$`)
)

// readPackageMap reads the rows of the "## Package map" section.
func readPackageMap(r io.Reader) ([]mapRow, error) {
	var rows []mapRow
	in := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Package map"
			continue
		}
		m := rowPackage.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(line), "|"), "|")
		row := mapRow{line: n, pattern: m[1]}
		last := strings.TrimSpace(comment.ReplaceAllString(cells[len(cells)-1], ""))
		for _, e := range strings.Split(last, ",") {
			e = strings.Trim(strings.TrimSpace(e), "`")
			switch {
			case e == "—":
			case e == "anything":
				row.any = true
			case e == "product":
				row.product = true
			case entry.MatchString(e):
				row.allowed = append(row.allowed, e)
			default:
				return nil, fmt.Errorf("line %d (%s): %q in the may-import column is not a package, dir/..., product, anything or —", n, row.pattern, e)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, errors.New("no rows under \"## Package map\"")
	}
	return rows, sc.Err()
}

// listedPackage is what go list says of one package of the module.
type listedPackage struct {
	ImportPath string
	Imports    []string // of its non-test files
}

// modulePackages lists the module's packages and their in-module imports,
// relative to the module path.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	cmd := exec.Command(goTool, "list", "-json=ImportPath,Imports", "../../...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/gpuvc/gpuvc/"
	pkgs := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var imports []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, mod); ok {
				imports = append(imports, rel)
			}
		}
		pkgs[strings.TrimPrefix(p.ImportPath, mod)] = imports
	}
	return pkgs
}

// isTestSupport: e2e/..., and the <pkg>test and fake<x> packages beside the code.
func isTestSupport(pkg string) bool {
	name := path.Base(pkg)
	return strings.HasPrefix(pkg, "e2e/") || strings.HasSuffix(name, "test") || strings.HasPrefix(name, "fake")
}

func rowOf(rows []mapRow, pkg string) int {
	// The most specific row wins: an exact one over a dir/... one.
	best := -1
	for i, r := range rows {
		if r.matches(pkg) && (best < 0 || len(r.pattern) > len(rows[best].pattern)) {
			best = i
		}
	}
	return best
}

func TestPackageMapFollowsTheImports(t *testing.T) {
	f, err := os.Open(mapDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := readPackageMap(f)
	if err != nil {
		t.Fatalf("%s: %v", mapDoc, err)
	}
	pkgs := modulePackages(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for p := range pkgs {
			if !yield(p) {
				return
			}
		}
	})

	used := make([]bool, len(rows))
	for _, pkg := range names {
		i := rowOf(rows, pkg)
		if i < 0 {
			t.Errorf("%s has no row in the package map of %s: add one (what it owns, what it may import) below the packages it imports", pkg, mapDoc)
			continue
		}
		used[i] = true
		row := rows[i]
		for _, imp := range pkgs[pkg] {
			j := rowOf(rows, imp)
			switch {
			case j < 0:
				continue // reported as a package without a row
			case j > i || (j == i && !strings.HasSuffix(row.pattern, "/...")):
				t.Errorf("%s imports %s, a package listed below it (line %d, %s, imports line %d): imports point up the map; move the row or the code", pkg, imp, row.line, mapDoc, rows[j].line)
			case row.any, j == i:
			case row.product && !isTestSupport(imp):
			case slices.ContainsFunc(row.allowed, func(a string) bool { return matchPattern(a, imp) }):
			default:
				t.Errorf("%s imports %s, which its row (line %d of %s) does not allow: %v", pkg, imp, row.line, mapDoc, row.allowed)
			}
		}
	}
	for i, r := range rows {
		if !used[i] {
			t.Errorf("line %d of %s: no package %s: remove the row or fix its name", r.line, mapDoc, r.pattern)
		}
		for _, a := range r.allowed {
			if !slices.ContainsFunc(names, func(p string) bool { return matchPattern(a, p) }) {
				t.Errorf("line %d of %s (%s): may import %s, which is no package", r.line, mapDoc, r.pattern, a)
			}
		}
	}
}

// TestNoTwoFoldersImportEachOther: between the top-level folders (api, gpu,
// syncer, vclusters, charts, manager, kind, cmd, e2e) imports go one way only.
func TestNoTwoFoldersImportEachOther(t *testing.T) {
	pkgs := modulePackages(t)
	top := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	example := map[[2]string]string{}
	for pkg, imports := range pkgs {
		for _, imp := range imports {
			if a, b := top(pkg), top(imp); a != b {
				example[[2]string{a, b}] = pkg + " → " + imp
			}
		}
	}
	for edge, one := range example {
		if back, ok := example[[2]string{edge[1], edge[0]}]; ok && edge[0] < edge[1] {
			t.Errorf("%s/ and %s/ import each other: %s, and %s", edge[0], edge[1], one, back)
		}
	}
}

func TestReadPackageMapRefusesWhatItCannotRead(t *testing.T) {
	doc := "## Package map\n\n| package | owns | may import |\n|---|---|---|\n" +
		"| `api/contract` | keys | — |\n" +
		"| `gpu/mig` | catalog | `api/contract` (for the MIG prefix) |\n" +
		"| `cmd/gpuvc/...` | commands | product |\n" +
		"| `e2e/suite` | tests | anything |\n\n## Next\n| `not/a/row` | x | y |\n"
	rows, err := readPackageMap(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[1].pattern != "gpu/mig" || !slices.Equal(rows[1].allowed, []string{"api/contract"}) ||
		!rows[2].product || !rows[3].any || rows[0].allowed != nil {
		t.Fatalf("read %+v", rows)
	}
	if got := rowOf(rows, "cmd/gpuvc/commands/team"); got != 2 {
		t.Errorf("cmd/gpuvc/commands/team: row %d, want the cmd/gpuvc/... row", got)
	}
	_, err = readPackageMap(strings.NewReader("## Package map\n| `gpu/mig` | catalog | contract and friends |\n"))
	if err == nil || !strings.Contains(err.Error(), `"contract and friends"`) {
		t.Errorf("a may-import entry that is no package: %v", err)
	}
}
