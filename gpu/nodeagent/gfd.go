package nodeagent

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// GFDMode says how the agent decides whether GPU Feature Discovery labels a node.
type GFDMode string

const (
	// GFDAuto detects GFD on the node (see DetectGFD).
	GFDAuto GFDMode = "auto"
	// GFDPresent treats GFD as running: the agent writes no nvidia.com/ labels.
	GFDPresent GFDMode = "present"
	// GFDAbsent treats GFD as absent: the agent writes GFD-compatible labels.
	GFDAbsent GFDMode = "absent"
)

// ParseGFDMode accepts auto, present or absent.
func ParseGFDMode(s string) (GFDMode, error) {
	switch m := GFDMode(s); m {
	case GFDAuto, GFDPresent, GFDAbsent:
		return m, nil
	}
	return "", fmt.Errorf("GFD mode %q is not one of auto, present, absent", s)
}

// Markers DetectGFD looks for.
const (
	// NFDFeatureLabelsAnnotation lists the labels Node Feature Discovery's
	// master applied to the node; GFD's labels reach nodes through NFD, so
	// they are listed there with their nvidia.com/ prefix.
	NFDFeatureLabelsAnnotation = "nfd.node.kubernetes.io/feature-labels"
	// gfdLabelPrefix is the label namespace GFD writes and the agent yields.
	gfdLabelPrefix = contract.NVIDIAPrefix
)

// DetectGFD reports whether GPU Feature Discovery labels the node, and the
// evidence: the GFD timestamp label, or an nvidia.com/ label listed in NFD's
// feature-labels annotation. Labels alone prove nothing — an administrator,
// gpuvc's own node pools or an earlier agent run may have written the same keys.
func DetectGFD(node *corev1.Node) (bool, string) {
	if _, ok := node.Labels[contract.LabelGFDTimestamp]; ok {
		return true, "label " + contract.LabelGFDTimestamp
	}
	for _, l := range strings.Split(node.Annotations[NFDFeatureLabelsAnnotation], ",") {
		if strings.HasPrefix(strings.TrimSpace(l), gfdLabelPrefix) {
			return true, fmt.Sprintf("annotation %s lists %s", NFDFeatureLabelsAnnotation, strings.TrimSpace(l))
		}
	}
	return false, ""
}

// gfdPresent resolves a mode against a node.
func gfdPresent(mode GFDMode, node *corev1.Node) (bool, string) {
	switch mode {
	case GFDPresent:
		return true, "--gfd=present"
	case GFDAbsent:
		return false, "--gfd=absent"
	}
	return DetectGFD(node)
}
