package team

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
)

type applyFlags struct {
	files []string
	waitFlags
}

func newApplyCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR [-f ...]",
		Short: "Create or update teams from YAML or JSON files (server-side apply)",
		Long: "Create or update teams from YAML or JSON files (server-side apply). A folder applies every\n" +
			"*.yaml, *.yml and *.json file in it; a file may hold several Team documents. Every team is\n" +
			"attempted; the command fails if any of them failed.",
		Example: "  gpuvc team apply -f teams/\n  gpuvc team apply -f fraud.yaml --wait",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			teams, err := readTeams(f.files, streams.In)
			if err != nil {
				return err
			}
			c, err := connect(globals)
			if err != nil {
				return err
			}
			var failed []error
			for _, t := range teams {
				res, err := c.Apply(cmd.Context(), t)
				if err != nil {
					fmt.Fprintf(streams.ErrOut, "team/%s: %v\n", t.Name, err)
					failed = append(failed, fmt.Errorf("team/%s", t.Name))
					continue
				}
				fmt.Fprintf(streams.Out, "team/%s %s\n", t.Name, res)
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d teams failed: %w", len(failed), len(teams), errors.Join(failed...))
			}
			if f.wait {
				for _, t := range teams {
					if err := waitAndReport(cmd, streams, c, t.Name, f.timeout); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, `file or folder of Team manifests ("-" reads standard input)`)
	f.waitFlags.add(cmd, "every applied team is Ready")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// readTeams reads every Team document of the named files and folders, refusing
// anything that is not a Team with the file and document it came from.
func readTeams(paths []string, stdin io.Reader) ([]*gpuvcv1.Team, error) {
	var teams []*gpuvcv1.Team
	seen := map[string]string{}
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			var data []byte
			if file == "-" {
				data, err = io.ReadAll(stdin)
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return nil, err
			}
			docs, err := decodeTeams(file, data)
			if err != nil {
				return nil, err
			}
			for _, t := range docs {
				if other, dup := seen[t.Name]; dup {
					return nil, fmt.Errorf("team %s is defined twice: in %s and %s", t.Name, other, file)
				}
				seen[t.Name] = file
				teams = append(teams, t)
			}
		}
	}
	if len(teams) == 0 {
		return nil, fmt.Errorf("no Team found in %s", strings.Join(paths, ", "))
	}
	return teams, nil
}

func expand(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	for _, pattern := range []string{"*.yaml", "*.yml", "*.json"} {
		m, _ := filepath.Glob(filepath.Join(p, pattern))
		files = append(files, m...)
	}
	sort.Strings(files)
	return files, nil
}

func decodeTeams(file string, data []byte) ([]*gpuvcv1.Team, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var teams []*gpuvcv1.Team
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return teams, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || string(bytes.TrimSpace(doc)) == "---" {
			continue
		}
		t := &gpuvcv1.Team{}
		if err := yaml.UnmarshalStrict(doc, t); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if t.APIVersion != gpuvcv1.GroupVersion.String() || t.Kind != "Team" {
			return nil, fmt.Errorf("%s: document %d is %s %s, not a Team (apiVersion %s, kind Team)", file, i, t.APIVersion, t.Kind, gpuvcv1.GroupVersion)
		}
		if t.Name == "" {
			return nil, fmt.Errorf("%s: document %d: metadata.name is required", file, i)
		}
		teams = append(teams, t)
	}
}
