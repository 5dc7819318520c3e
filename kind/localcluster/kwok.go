package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpuvc/gpuvc/api/contract"
)

// kwokNodeAnnotation marks the Nodes kwok manages; the share controller reads
// it too (it invents reservation GPU UUIDs only there).
const kwokNodeAnnotation = contract.AnnotationKwokNode

// kwokStageFiles are the Stage documents kwok needs, from the kwok module's own
// kustomize/stage folder: v0.8.0 has no built-in stages, and a KwokConfiguration
// document would skip its defaulting.
var kwokStageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// writeKwokStages concatenates the stage documents of the kwok module (the
// builder recorded its stage folder, FileKwokStages) into one file under dir and
// returns its path.
func writeKwokStages(dir string) (string, error) {
	m, err := LoadManifest()
	if err != nil {
		return "", err
	}
	stageDir, err := m.File(FileKwokStages)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	for _, f := range kwokStageFiles {
		b, err := os.ReadFile(filepath.Join(stageDir, f))
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
