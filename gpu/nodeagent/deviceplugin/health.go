package deviceplugin

import (
	"sync"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Health is the devices' health, shared by every resource's server: the agent
// marks a failed GPU, and each ListAndWatch stream sends its devices again
// with that GPU (and its MIG devices) Unhealthy, so the kubelet stops
// allocating it and lowers the node's allocatable count; when the GPU returns
// to service they are sent Healthy again.
type Health struct {
	mu        sync.Mutex
	unhealthy map[string]bool
	// parent maps a device ID (GPU or MIG device UUID) to its GPU's UUID.
	parent  map[string]string
	changed chan struct{} // closed and replaced on every change
}

// NewHealth starts with every device of inv healthy.
func NewHealth(inv inventory.Inventory) *Health {
	h := &Health{unhealthy: map[string]bool{}, parent: map[string]string{}, changed: make(chan struct{})}
	for _, g := range inv.GPUs {
		h.parent[g.UUID] = g.UUID
		for _, gi := range g.MIG.Instances {
			for _, d := range gi.Devices {
				h.parent[d.UUID] = g.UUID
			}
		}
	}
	return h
}

// SetUnhealthy marks a GPU (by its UUID) failed, with all its MIG devices.
func (h *Health) SetUnhealthy(gpuUUID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unhealthy[gpuUUID] {
		return
	}
	h.unhealthy[gpuUUID] = true
	close(h.changed)
	h.changed = make(chan struct{})
}

// SetHealthy returns a GPU (by its UUID) to service, with all its MIG
// devices: the streams send them Healthy again and the kubelet allocates them.
func (h *Health) SetHealthy(gpuUUID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.unhealthy[gpuUUID] {
		return
	}
	delete(h.unhealthy, gpuUUID)
	close(h.changed)
	h.changed = make(chan struct{})
}

// healthy reports a device's health and returns a channel closed at the next
// change.
func (h *Health) healthy(id string) (bool, <-chan struct{}) {
	if h == nil {
		return true, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.unhealthy[h.parent[id]], h.changed
}
