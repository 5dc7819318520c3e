// Package cli holds what every gpuvc command shares: I/O streams, global flags, the
// client configuration they resolve to, and how errors become exit codes.
package cli

import (
	"io"
	"os"
)

// Streams are the standard streams a command writes to; tests replace them with buffers.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// StandardStreams returns the process's stdin, stdout and stderr.
func StandardStreams() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}
