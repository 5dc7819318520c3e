package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Output is the -o/--output flag shared by commands that print objects.
type Output struct {
	Format  string
	allowed []string
}

// NewOutput returns an output flag accepting the given formats; the first is the default.
func NewOutput(formats ...string) *Output {
	return &Output{Format: formats[0], allowed: formats}
}

// AddFlag registers -o/--output.
func (o *Output) AddFlag(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Format, "output", "o", o.Format, fmt.Sprintf("output format, one of %v", o.allowed))
}

// AddTo registers -o/--output on cmd, completing the formats in a shell.
func (o *Output) AddTo(cmd *cobra.Command) {
	o.AddFlag(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.Formats(), cobra.ShellCompDirectiveNoFileComp))
}

// Formats are the formats the flag accepts, the default first.
func (o *Output) Formats() []string { return append([]string(nil), o.allowed...) }

// Validate rejects a format the command does not support, naming the choices.
func (o *Output) Validate() error {
	for _, f := range o.allowed {
		if o.Format == f {
			return nil
		}
	}
	return fmt.Errorf("--output %q is not supported: use one of %v", o.Format, o.allowed)
}

// PrintStructured writes obj as JSON or YAML; it reports false for other formats so the
// caller prints its own human-readable form.
func (o *Output) PrintStructured(w io.Writer, obj any) (bool, error) {
	switch o.Format {
	case "json":
		b, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(w, string(b))
		return true, err
	case "yaml":
		b, err := yaml.Marshal(obj)
		if err != nil {
			return true, err
		}
		_, err = w.Write(b)
		return true, err
	}
	return false, nil
}
