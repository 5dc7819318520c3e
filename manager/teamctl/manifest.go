package teamctl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// manifestError lists every problem found in the manifests, one per line, each
// naming its file, document and field, so one run shows everything to fix.
type manifestError struct {
	problems []string
	files    int
}

func (e *manifestError) Error() string {
	return strings.Join(e.problems, "\n") + "\n" + plural(len(e.problems), "problem") + " in " + plural(e.files, "file")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ReadTeams reads every Team document of the named files and folders (subfolders
// too when recursive; otherwise they are returned as skipped), "-" reading stdin:
// what `gpuvc team apply -f` applies. A file may hold several Team documents or
// a TeamList. It reads everything before judging, and fails with every problem
// found (one a line, each naming its file, document, team and field), or with
// none. The Teams returned keep only what a person decides in a manifest (no
// uid, resourceVersion, status...), so saved output of `team get -o yaml`
// applies again.
func ReadTeams(paths []string, recursive bool, stdin io.Reader) (teams []*gpuvcv1.Team, skipped []string, err error) {
	var problems []string
	badFiles := map[string]bool{}
	problem := func(file, msg string) {
		problems = append(problems, msg)
		badFiles[file] = true
	}
	seen := map[string]string{}
	for _, p := range paths {
		files, skip, err := expand(p, recursive)
		skipped = append(skipped, skip...)
		if err != nil {
			problem(p, err.Error())
			continue
		}
		for _, file := range files {
			var data []byte
			if file == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				problem(file, err.Error())
				continue
			}
			docs, bad := decodeTeams(displayName(file), data)
			for _, b := range bad {
				problem(file, b)
			}
			for _, t := range docs {
				if other, dup := seen[t.Name]; dup {
					problem(file, fmt.Sprintf("team %s is defined twice: in %s and %s", t.Name, other, displayName(file)))
					continue
				}
				seen[t.Name] = displayName(file)
				teams = append(teams, t)
			}
		}
	}
	if len(problems) > 0 {
		return nil, skipped, &manifestError{problems: problems, files: len(badFiles)}
	}
	if len(teams) == 0 {
		return nil, skipped, fmt.Errorf("no Team found in %s", strings.Join(paths, ", "))
	}
	return teams, skipped, nil
}

func displayName(file string) string {
	if file == "-" {
		return "standard input"
	}
	return file
}

var manifestExtensions = []string{".yaml", ".yml", ".json"}

// expand lists the manifest files a path names: the file itself, or a folder's
// *.yaml, *.yml and *.json files, walking subfolders when recursive and otherwise
// reporting them as skipped; hidden folders (.git) are left out either way.
func expand(p string, recursive bool) (files, skipped []string, err error) {
	if p == "-" {
		return []string{p}, nil, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil, nil
	}
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .git and the like hold no teams
			}
			if path != p && !recursive {
				skipped = append(skipped, path+string(filepath.Separator))
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range manifestExtensions {
			if strings.HasSuffix(d.Name(), ext) {
				files = append(files, path)
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, skipped, err
}

var teamType = reflect.TypeOf(gpuvcv1.Team{})

// decodeTeams returns the Teams of one file and a problem for every document
// that is not a valid Team. A TeamList (what `team list -o yaml` prints) counts
// as its items.
func decodeTeams(file string, data []byte) ([]*gpuvcv1.Team, []string) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var teams []*gpuvcv1.Team
	var problems []string
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return teams, problems
		}
		label := fmt.Sprintf("%s: document %d", file, i)
		if err != nil {
			return teams, append(problems, fmt.Sprintf("%s: %v", label, err))
		}
		obj, err := decodeGeneric(doc)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", label, err))
			continue
		}
		if obj == nil {
			continue // empty or only comments
		}
		m, ok := obj.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is %s, not a Team object", label, describeValue(obj)))
			continue
		}
		if items, ok := listItems(m); ok {
			for j, item := range items {
				t, bad := checkTeam(fmt.Sprintf("%s items[%d]", label, j), item)
				teams, problems = appendTeam(teams, t), append(problems, bad...)
			}
			continue
		}
		t, bad := checkTeam(label, m)
		teams, problems = appendTeam(teams, t), append(problems, bad...)
	}
}

func appendTeam(teams []*gpuvcv1.Team, t *gpuvcv1.Team) []*gpuvcv1.Team {
	if t == nil {
		return teams
	}
	return append(teams, t)
}

// decodeGeneric turns one YAML or JSON document into maps, lists and json.Numbers,
// refusing duplicate keys.
func decodeGeneric(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var obj any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// listItems returns the items of a TeamList or a kubectl List.
func listItems(m map[string]any) ([]any, bool) {
	kind, _ := m["kind"].(string)
	if kind != "TeamList" && kind != "List" {
		return nil, false
	}
	items, _ := m["items"].([]any)
	return items, true
}

// checkTeam judges one document as a Team: kind and apiVersion first, then every
// field against the Team type, then the values by the Team's own validation. It
// returns the Team only when there is no problem.
func checkTeam(label string, obj any) (*gpuvcv1.Team, []string) {
	m, ok := obj.(map[string]any)
	if !ok {
		return nil, []string{fmt.Sprintf("%s is %s, not a Team object", label, describeValue(obj))}
	}
	want := gpuvcv1.GroupVersion.String()
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	var problems []string
	kindProblem := ""
	switch {
	case kind == "Team":
	case kind == "":
		kindProblem = "kind is missing (want Team)"
	case strings.EqualFold(kind, "Team"):
		kindProblem = fmt.Sprintf("kind %q: did you mean Team?", kind)
	default:
		if apiVersion == "" {
			apiVersion = "no apiVersion"
		}
		return nil, []string{fmt.Sprintf("%s is a %s (%s), not a Team (%s)", label, kind, apiVersion, want)}
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		if name, ok := meta["name"].(string); ok && name != "" {
			label += " (team " + name + ")"
		}
	}
	if kindProblem != "" {
		problems = append(problems, label+": "+kindProblem)
	}
	switch apiVersion {
	case want:
	case "":
		problems = append(problems, fmt.Sprintf("%s: apiVersion is missing (want %s)", label, want))
	default:
		problems = append(problems, fmt.Sprintf("%s: apiVersion %q is not %s", label, apiVersion, want))
	}
	for _, p := range checkFields(m, teamType) {
		if strings.HasPrefix(p, "apiVersion:") || strings.HasPrefix(p, "kind:") {
			continue // named above
		}
		problems = append(problems, label+": "+p)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	raw, _ := json.Marshal(m)
	t := &gpuvcv1.Team{}
	if err := json.Unmarshal(raw, t); err != nil {
		return nil, []string{fmt.Sprintf("%s: %v", label, err)}
	}
	if t.Name == "" {
		return nil, []string{label + ": metadata.name is required"}
	}
	// Values the API server would refuse, checked by the same rules, so that one
	// refused team cannot leave the others half-applied.
	for _, e := range t.Validate() {
		problems = append(problems, label+": "+e.Error())
	}
	if len(problems) > 0 {
		return nil, problems
	}
	asApplied(t)
	return t, nil
}

// asApplied keeps what a person decides in a manifest and drops what the API server
// owns, so the saved output of `team get -o yaml` (or kubectl's) applies again even
// after the team was recreated: no uid or resourceVersion preconditions, no status.
func asApplied(t *gpuvcv1.Team) {
	t.TypeMeta = metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"}
	m := &t.ObjectMeta
	m.UID, m.ResourceVersion, m.Generation, m.ManagedFields = "", "", 0, nil
	m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds = metav1.Time{}, nil, nil
	m.Finalizers = nil
	t.Status = gpuvcv1.TeamStatus{}
}
