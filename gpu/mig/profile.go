package mig

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Profile is one GPU-instance profile of a model, e.g. 1g.10gb on A100-80GB.
type Profile struct {
	Name            string // canonical name, e.g. "1g.10gb" or "1g.10gb+me"
	ComputeSlices   int    // the "g" count
	MemoryGB        int    // memory as named
	MemoryMiB       int    // memory as NVML reports it (see MemoryEstimated)
	MemoryEstimated bool   // true when MemoryMiB was derived, not observed
	MemorySlots     int    // placement size in memory slots
	Starts          []int  // allowed start slots, ascending
	MaxInstances    int    // per GPU
	MediaExtensions bool   // "+me": owns the GPU's JPEG/OFA engines
	DriverID        int    // profile id shown by `nvidia-smi mig -lgip`
}

// ResourceName is the device-plugin resource for this profile (mixed strategy).
func (p Profile) ResourceName() string { return ResourceName(p.Name) }

// ProfileName is a parsed profile name; it does not depend on a GPU model.
type ProfileName struct {
	ComputeSlices   int
	MemoryGB        int
	MediaExtensions bool
}

// String renders the canonical name, e.g. "1g.5gb+me".
func (n ProfileName) String() string {
	s := fmt.Sprintf("%dg.%dgb", n.ComputeSlices, n.MemoryGB)
	if n.MediaExtensions {
		s += "+me"
	}
	return s
}

// ParseProfileName parses "<c>g.<m>gb" with an optional "+me" suffix.
// A leading "MIG " (as NVML and nvidia-smi print names) is accepted.
func ParseProfileName(s string) (ProfileName, error) {
	orig := s
	s = strings.TrimPrefix(s, "MIG ")
	var n ProfileName
	if rest, ok := strings.CutSuffix(s, "+me"); ok {
		n.MediaExtensions = true
		s = rest
	}
	g, m, ok := strings.Cut(s, "g.")
	if !ok || !strings.HasSuffix(m, "gb") {
		return ProfileName{}, fmt.Errorf("invalid MIG profile name %q: want <slices>g.<memory>gb[+me], e.g. 1g.10gb", orig)
	}
	c, err1 := positiveInt(g)
	mem, err2 := positiveInt(strings.TrimSuffix(m, "gb"))
	if err1 != nil || err2 != nil {
		return ProfileName{}, fmt.Errorf("invalid MIG profile name %q: slices and memory must be positive integers", orig)
	}
	n.ComputeSlices, n.MemoryGB = c, mem
	return n, nil
}

// positiveInt parses plain decimal digits (no sign, no leading zero).
func positiveInt(s string) (int, error) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, fmt.Errorf("not a positive integer: %q", s)
	}
	return strconv.Atoi(s)
}

// ResourceName maps a profile name to its device-plugin resource name:
// "1g.10gb" -> "nvidia.com/mig-1g.10gb", "1g.10gb+me" -> "nvidia.com/mig-1g.10gb.me"
// (resource names may not contain '+').
func ResourceName(profile string) string {
	return contract.ResourceMIGPrefix + strings.ReplaceAll(profile, "+", ".")
}

// ParseResourceName is the inverse of ResourceName.
func ParseResourceName(resource string) (ProfileName, error) {
	rest, ok := strings.CutPrefix(resource, contract.ResourceMIGPrefix)
	if !ok {
		return ProfileName{}, fmt.Errorf("invalid MIG resource name %q: want prefix %q", resource, contract.ResourceMIGPrefix)
	}
	if strings.ContainsAny(rest, "+ ") {
		return ProfileName{}, fmt.Errorf("invalid MIG resource name %q: '+' and spaces are not allowed", resource)
	}
	if base, ok := strings.CutSuffix(rest, ".me"); ok {
		rest = base + "+me"
	}
	n, err := ParseProfileName(rest)
	if err != nil {
		return ProfileName{}, fmt.Errorf("invalid MIG resource name %q: want %s<slices>g.<memory>gb[.me]", resource, contract.ResourceMIGPrefix)
	}
	return n, nil
}
