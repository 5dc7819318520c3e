package version_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version"
)

func TestVersionOutputs(t *testing.T) {
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := version.NewCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	text, err := run()
	require.NoError(t, err)
	require.Regexp(t, `^gpuvc \S+ \(commit \S+, go1\.\d+`, text)
	// Test binaries carry no module versions; the e2e suite checks the real
	// binary reports client-go's.
	require.Regexp(t, `client-go \S+\)\n$`, text)

	js, err := run("-o", "json")
	require.NoError(t, err)
	var info version.Info
	require.NoError(t, json.Unmarshal([]byte(js), &info))
	require.Equal(t, version.Get(), info)

	_, err = run("-o", "table")
	require.ErrorContains(t, err, `--output "table" is not supported: use one of [text json yaml]`)
}
