package charts_test

import (
	"bytes"
	"testing"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/manager"
)

// TestManagerArgsParse parses the manager container's arguments with `gpuvc
// manager`'s own command: every flag exists and its value has the flag's type
// (ports are ints, booleans take no value), nothing is left over. The agent's
// command links go-nvml (cgo, lazy binding), so its flags are checked against a
// list instead (agent_test.go).
func TestManagerArgsParse(t *testing.T) {
	for name, values := range charts.ValueSets {
		t.Run(name, func(t *testing.T) {
			args := charts.ManagerArgs(t, values)
			if args[0] != "manager" {
				t.Fatalf("args %q: want the manager role first", args)
			}
			var out bytes.Buffer
			cmd := manager.NewCommand(cli.Streams{In: &bytes.Buffer{}, Out: &out, ErrOut: &out}, &cli.Globals{})
			if err := cmd.ParseFlags(args[1:]); err != nil {
				t.Fatalf("gpuvc manager refuses %q: %v", args[1:], err)
			}
			if left := cmd.Flags().Args(); len(left) > 0 {
				t.Errorf("gpuvc manager: arguments left over: %q", left)
			}
		})
	}
}
