// Package clitest is test support for the commands: only tests import it.
package clitest

import (
	"os"
	"path/filepath"
	"testing"
)

// UnreachableServer is the server of UnreachableKubeconfig: nothing listens on
// port 1.
const UnreachableServer = "https://127.0.0.1:1"

// UnreachableKubeconfig writes a kubeconfig whose server does not answer and
// returns its path: a command builds its client from it, and a test fails it
// before it calls the server, or checks how the command names that server.
func UnreachableKubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + UnreachableServer + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
