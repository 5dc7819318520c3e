package localcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// kwokNodeAnnotation marks the Nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// kwokStageFiles are the Stage documents kwok needs, taken from the kwok module's own
// kustomize/stage folder: v0.8.0 has no built-in stages, and a KwokConfiguration
// document would skip its defaulting.
var kwokStageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// writeKwokStages concatenates the stage documents from the module cache into one
// file under dir and returns its path.
func writeKwokStages(dir string) (string, error) {
	modDir, err := moduleDir("sigs.k8s.io/kwok", KwokVersion)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	for _, f := range kwokStageFiles {
		b, err := os.ReadFile(filepath.Join(modDir, "kustomize", "stage", f))
		if err != nil {
			return "", fmt.Errorf("reading kwok stage %s: %w", f, err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
		buf.WriteString("\n")
	}
	path := filepath.Join(dir, "kwok-stages.yaml")
	return path, os.WriteFile(path, buf.Bytes(), 0o644)
}

// moduleDir returns where a module version lives in the module cache, downloading it
// if needed (the kwok build has normally fetched it already).
func moduleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = filepath.Join(ToolsDir(), "kwok")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating %s@%s in the module cache: %w", module, version, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return "", fmt.Errorf("go mod download gave no folder for %s@%s: %s", module, version, out)
	}
	return mod.Dir, nil
}
