// Package bringup runs a bring-up sequence as ordered, named steps, in the
// manner of kind's cluster create actions: each step is a small function with a
// name; the runner announces each one in the progress output before it runs and
// stops at the first that fails, naming it in the error. The local control
// plane, the real node, the local Kueue and the local stack that assembles them
// (kind/localcluster, kind/localnode, kind/localkueue, kind/localstack) start
// this way; each builds its list from its options, so a unit test reads which
// steps run, in which order, without running any.
package bringup

import (
	"context"
	"fmt"
	"io"
)

// Step is one named step of a sequence.
type Step struct {
	// Name says what the step does, in the imperative ("start etcd"): progress
	// lines and errors show it.
	Name string
	Run  func(ctx context.Context) error
}

// Run runs steps in order. Before each it writes "<who>: [i/n] <name>" to log
// (nil discards); it stops at the first step that fails, or at a step ctx no
// longer lets start, and returns that step's error prefixed with who and the
// step's name and place. Undoing what earlier steps did is the caller's.
func Run(ctx context.Context, who string, log io.Writer, steps []Step) error {
	if log == nil {
		log = io.Discard
	}
	for i, s := range steps {
		fail := func(err error) error {
			return fmt.Errorf("%s: step %d of %d, %s: %w", who, i+1, len(steps), s.Name, err)
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		fmt.Fprintf(log, "%s: [%d/%d] %s\n", who, i+1, len(steps), s.Name)
		if err := s.Run(ctx); err != nil {
			return fail(err)
		}
	}
	return nil
}

// Names lists the steps' names in order.
func Names(steps []Step) []string {
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.Name
	}
	return names
}

// Upto returns the steps before the one named stop (all of them if none is):
// a test runs a sequence's first steps, those that need no process or machine
// slot, and checks what they left.
func Upto(steps []Step, stop string) []Step {
	for i, s := range steps {
		if s.Name == stop {
			return steps[:i]
		}
	}
	return steps
}
