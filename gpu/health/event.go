// Package health watches a node's GPUs for failures that make them unusable:
// critical XID errors, double-bit ECC errors and GPUs fallen off the bus. It
// reads NVML events (go-nvml EventSet) on real nodes and an injection file on
// simulated ones; what to do about a failure is the node agent's business.
package health

import (
	"fmt"
	"slices"
)

// Kind is what went wrong with a GPU.
type Kind string

const (
	// KindXID is a critical XID error reported by the driver.
	KindXID Kind = "XID"
	// KindDoubleBitECC is an uncorrectable (double-bit) ECC memory error.
	KindDoubleBitECC Kind = "DoubleBitECC"
	// KindLost is a GPU NVML can no longer reach (fallen off the bus).
	KindLost Kind = "GPULost"
)

// Event is one failure of one GPU.
type Event struct {
	// Index and UUID name the physical GPU (a MIG device's failure is its
	// parent GPU's).
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Kind  Kind   `json:"kind"`
	// XID is the error number of a KindXID event.
	XID uint64 `json:"xid,omitempty"`
}

// String names the GPU and the error, for conditions, events and logs:
// "GPU 3 (GPU-…): XID 79 (GPU has fallen off the bus)".
func (e Event) String() string {
	what := string(e.Kind)
	switch e.Kind {
	case KindXID:
		what = fmt.Sprintf("XID %d", e.XID)
		if d, ok := xidNames[e.XID]; ok {
			what += " (" + d + ")"
		}
	case KindDoubleBitECC:
		what = "double-bit ECC error"
	case KindLost:
		what = "GPU is lost (fallen off the bus)"
	}
	return fmt.Sprintf("GPU %d (%s): %s", e.Index, e.UUID, what)
}

// xidNames describe the XIDs operators meet most (NVIDIA's XID catalogue).
var xidNames = map[uint64]string{
	48: "double-bit ECC error", 63: "ECC page retirement or row remapping",
	64: "ECC page retirement or row remapper recording failure", 74: "NVLink error",
	79: "GPU has fallen off the bus", 92: "high single-bit ECC error rate",
	94: "contained ECC error", 95: "uncontained ECC error",
	119: "GSP RPC timeout", 120: "GSP error",
}

// applicationXIDs are XIDs a user application causes (a bad kernel, an
// illegal memory access, a killed context): the GPU itself is fine, so they do
// not make it unhealthy. The same set NVIDIA's device plugin skips by default.
var applicationXIDs = []uint64{13, 31, 43, 45, 68, 109}

// Critical reports whether an XID makes the GPU unhealthy; ignore adds XIDs an
// operator declared harmless.
func Critical(xid uint64, ignore []uint64) bool {
	return !slices.Contains(applicationXIDs, xid) && !slices.Contains(ignore, xid)
}
