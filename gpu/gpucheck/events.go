package gpucheck

import (
	"context"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/gpu/health"
)

// eventsStep runs the agent's health watcher (health.NVML) for a few seconds:
// it must register every GPU for XID and double-bit ECC events and return
// cleanly when its context ends. No fault is injected.
func eventsStep(ctx context.Context, c *Config, f *facts, s *Step) {
	s.Reference = "NVML's supported event types per GPU, and a clean end of the watch"
	if len(f.inv.GPUs) == 0 {
		s.Err = "no inventory from the first step"
		return
	}
	supported(c, f, s)
	wctx, cancel := context.WithTimeout(ctx, c.EventWait)
	defer cancel()
	var events []health.Event
	began := time.Now()
	err := health.NVML{Lib: c.Lib, WaitMillis: 500}.Watch(wctx, func(e health.Event) { events = append(events, e) })
	took := time.Since(began).Round(time.Millisecond)
	switch {
	case err != nil:
		s.add("", "watch", err.Error(), "registered, then a clean end", Differs, "")
	case ctx.Err() != nil:
		s.add("", "watch", "", "", NotRead, ctx.Err().Error())
	default:
		s.add("", "watch", fmt.Sprintf("registered; ended cleanly after %s", took), fmt.Sprintf("end when the %s wait is over", c.EventWait), OK, "")
	}
	for _, e := range events {
		s.add(gpuName(e.Index), "critical event during the wait", e.String(), "(none expected)", Info, "a real failure of this GPU, not of the check")
	}
}

// supported reads the event types each GPU supports, as the watcher does
// before it registers.
func supported(c *Config, f *facts, s *Step) {
	if ret := c.Lib.Init(); ret != nvml.SUCCESS {
		s.add("", "NVML init", "", ret.Error(), NotRead, "")
		return
	}
	defer c.Lib.Shutdown()
	for _, g := range f.inv.GPUs {
		name := gpuName(g.Index)
		d, ret := c.Lib.DeviceGetHandleByIndex(g.Index)
		if ret != nvml.SUCCESS {
			s.add(name, "device handle", "", ret.Error(), NotRead, "")
			continue
		}
		types, ret := d.GetSupportedEventTypes()
		if ret != nvml.SUCCESS {
			s.add(name, "supported event types", "", ret.Error(), Differs, "the watcher cannot register this GPU")
			continue
		}
		for _, e := range []struct {
			name string
			bit  uint64
		}{{"critical XID events", nvml.EventTypeXidCriticalError}, {"double-bit ECC events", nvml.EventTypeDoubleBitEccError}} {
			st, v := OK, "watched"
			if types&e.bit == 0 {
				st, v = Info, "not supported by this GPU"
			}
			s.add(name, e.name, v, fmt.Sprintf("supported mask %#x", types), st, "")
		}
	}
}
