package health

import (
	"context"
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Watcher reports GPU failures until ctx ends.
type Watcher interface {
	// Watch calls report for every critical failure, from one goroutine, and
	// returns nil when ctx ends or an error when it cannot watch at all.
	Watch(ctx context.Context, report func(Event)) error
}

// NVML watches the driver's events through an EventSet: critical XID errors
// and double-bit ECC errors of every GPU; a wait that finds a GPU lost reports
// KindLost for every GPU NVML can no longer reach.
type NVML struct {
	Lib nvml.Interface
	// IgnoreXIDs are XIDs not to treat as critical, besides the application
	// errors Critical always ignores.
	IgnoreXIDs []uint64
	// WaitMillis bounds one EventSet wait, so a cancelled ctx is seen; zero
	// means 1000.
	WaitMillis uint32
}

var _ Watcher = NVML{}

// watchedEvents are the event types that can make a GPU unhealthy.
const watchedEvents = nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError

type gpu struct {
	index int
	uuid  string
	dev   nvml.Device
	lost  bool
}

// Watch initialises NVML (and shuts it down at the end), registers every GPU
// for the events it supports and waits for events until ctx ends.
func (n NVML) Watch(ctx context.Context, report func(Event)) (err error) {
	if n.Lib == nil {
		return errors.New("no NVML library given")
	}
	if ret := n.Lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML init: %v", ret.Error())
	}
	defer n.Lib.Shutdown()
	set, ret := n.Lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("NVML event set: %v", ret.Error())
	}
	defer set.Free()
	gpus, err := register(n.Lib, set)
	if err != nil {
		return err
	}
	wait := n.WaitMillis
	if wait == 0 {
		wait = 1000
	}
	for ctx.Err() == nil {
		data, ret := set.Wait(wait)
		switch ret {
		case nvml.SUCCESS:
			if e, ok := n.event(gpus, data); ok {
				report(e)
			}
		case nvml.ERROR_TIMEOUT:
		case nvml.ERROR_GPU_IS_LOST:
			for _, g := range gpus {
				if _, r := g.dev.GetUUID(); r == nvml.ERROR_GPU_IS_LOST && !g.lost {
					g.lost = true
					report(Event{Index: g.index, UUID: g.uuid, Kind: KindLost})
				}
			}
		default:
			return fmt.Errorf("waiting for NVML events: %v", ret.Error())
		}
	}
	return nil
}

// register adds every GPU to the set for the watched events it supports. A GPU
// that supports none of them cannot be watched, which is said, not hidden.
func register(lib nvml.Interface, set nvml.EventSet) ([]*gpu, error) {
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %v", ret.Error())
	}
	var gpus []*gpu
	for i := range count {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d: handle: %v", i, ret.Error())
		}
		uuid, ret := d.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d: UUID: %v", i, ret.Error())
		}
		types := uint64(watchedEvents)
		if supported, ret := d.GetSupportedEventTypes(); ret == nvml.SUCCESS {
			types &= supported
		}
		if types == 0 {
			return nil, fmt.Errorf("GPU %d (%s) reports none of the XID and ECC events: its health cannot be watched", i, uuid)
		}
		if ret := d.RegisterEvents(types, set); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d (%s): registering for events: %v", i, uuid, ret.Error())
		}
		gpus = append(gpus, &gpu{index: i, uuid: uuid, dev: d})
	}
	return gpus, nil
}

// event turns NVML's event data into an Event when it is critical.
func (n NVML) event(gpus []*gpu, data nvml.EventData) (Event, bool) {
	var g *gpu
	if data.Device != nil {
		if uuid, ret := data.Device.GetUUID(); ret == nvml.SUCCESS {
			for _, c := range gpus {
				if c.uuid == uuid {
					g = c
				}
			}
		}
	}
	if g == nil {
		// A MIG device or a handle NVML cannot describe: without a GPU to
		// name, nothing can be marked. (MIG device events carry their parent
		// GPU's handle in practice.)
		return Event{}, false
	}
	switch {
	case data.EventType&nvml.EventTypeDoubleBitEccError != 0:
		return Event{Index: g.index, UUID: g.uuid, Kind: KindDoubleBitECC}, true
	case data.EventType&nvml.EventTypeXidCriticalError != 0 && Critical(data.EventData, n.IgnoreXIDs):
		return Event{Index: g.index, UUID: g.uuid, Kind: KindXID, XID: data.EventData}, true
	}
	return Event{}, false
}
