package clitest

import (
	"strings"
	"testing"
)

// FailsSaying checks that a command failed with an error containing every one
// of words: what a user must read to fix the input.
func FailsSaying(t testing.TB, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("command succeeded, want an error")
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
