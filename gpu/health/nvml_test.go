package health

import (
	"context"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
)

// fakeGPUs is a mock NVML with n GPUs whose event set returns the waits in
// order, then cancels ctx.
type fakeGPUs struct {
	devs      []*mock.Device
	lib       *mock.Interface
	registers map[string]uint64
	shutdown  bool
	freed     bool
}

type wait struct {
	dev  int // -1: no device
	typ  uint64
	data uint64
	ret  nvml.Return
}

func newFakeGPUs(n int, supported uint64, waits []wait, cancel context.CancelFunc) *fakeGPUs {
	f := &fakeGPUs{registers: map[string]uint64{}}
	lost := map[int]bool{}
	for i := range n {
		uuid := "GPU-" + string(rune('a'+i))
		d := &mock.Device{}
		d.GetUUIDFunc = func() (string, nvml.Return) {
			if lost[i] {
				return "", nvml.ERROR_GPU_IS_LOST
			}
			return uuid, nvml.SUCCESS
		}
		d.GetSupportedEventTypesFunc = func() (uint64, nvml.Return) { return supported, nvml.SUCCESS }
		d.RegisterEventsFunc = func(types uint64, _ nvml.EventSet) nvml.Return {
			f.registers[uuid] = types
			return nvml.SUCCESS
		}
		f.devs = append(f.devs, d)
	}
	next := 0
	set := &mock.EventSet{
		FreeFunc: func() nvml.Return { f.freed = true; return nvml.SUCCESS },
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			if next >= len(waits) {
				cancel()
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			w := waits[next]
			next++
			if w.ret == nvml.ERROR_GPU_IS_LOST {
				lost[w.dev] = true
				return nvml.EventData{}, w.ret
			}
			var d nvml.Device
			if w.dev >= 0 {
				d = f.devs[w.dev]
			}
			return nvml.EventData{Device: d, EventType: w.typ, EventData: w.data}, w.ret
		},
	}
	f.lib = &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { f.shutdown = true; return nvml.SUCCESS },
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return n, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return f.devs[i], nvml.SUCCESS
		},
	}
	return f
}

func TestNVMLReportsCriticalEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeGPUs(3, nvml.EventTypeAll, []wait{
		{ret: nvml.ERROR_TIMEOUT},
		{dev: 1, typ: nvml.EventTypeXidCriticalError, data: 79, ret: nvml.SUCCESS},
		{dev: 0, typ: nvml.EventTypeXidCriticalError, data: 13, ret: nvml.SUCCESS}, // application error
		{dev: 0, typ: nvml.EventTypeXidCriticalError, data: 94, ret: nvml.SUCCESS}, // ignored by the operator
		{dev: 2, typ: nvml.EventTypeDoubleBitEccError, ret: nvml.SUCCESS},
		{dev: -1, typ: nvml.EventTypeXidCriticalError, data: 79, ret: nvml.SUCCESS}, // no device
		{dev: 0, ret: nvml.ERROR_GPU_IS_LOST},
	}, cancel)
	var got []Event
	err := NVML{Lib: f.lib, IgnoreXIDs: []uint64{94}}.Watch(ctx, func(e Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Index: 1, UUID: "GPU-b", Kind: KindXID, XID: 79},
		{Index: 2, UUID: "GPU-c", Kind: KindDoubleBitECC},
		{Index: 0, UUID: "GPU-a", Kind: KindLost},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for uuid, types := range f.registers {
		if types != nvml.EventTypeXidCriticalError|nvml.EventTypeDoubleBitEccError {
			t.Errorf("%s registered for %#x, want XID and double-bit ECC", uuid, types)
		}
	}
	if len(f.registers) != 3 || !f.freed || !f.shutdown {
		t.Errorf("registered %v, set freed %v, NVML shut down %v", f.registers, f.freed, f.shutdown)
	}
}

func TestNVMLRegistersOnlySupportedEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeGPUs(1, nvml.EventTypeXidCriticalError|nvml.EventTypePState, nil, cancel)
	if err := (NVML{Lib: f.lib}).Watch(ctx, func(Event) {}); err != nil {
		t.Fatal(err)
	}
	if f.registers["GPU-a"] != nvml.EventTypeXidCriticalError {
		t.Errorf("registered %#x, want only XID (no ECC on this GPU)", f.registers["GPU-a"])
	}

	f = newFakeGPUs(1, nvml.EventTypePState, nil, cancel)
	err := NVML{Lib: f.lib}.Watch(ctx, func(Event) {})
	if err == nil || !strings.Contains(err.Error(), "health cannot be watched") {
		t.Errorf("err = %v, want a GPU whose health cannot be watched named", err)
	}
	if !f.shutdown {
		t.Error("NVML not shut down after a failed registration")
	}
}

func TestNVMLWaitErrorEndsTheWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFakeGPUs(1, nvml.EventTypeAll, []wait{{ret: nvml.ERROR_UNKNOWN}}, cancel)
	err := NVML{Lib: f.lib}.Watch(ctx, func(Event) {})
	if err == nil || !strings.Contains(err.Error(), "waiting for NVML events") {
		t.Errorf("err = %v, want the wait failure", err)
	}
}

func TestEventString(t *testing.T) {
	for want, e := range map[string]Event{
		"GPU 3 (GPU-x): XID 79 (GPU has fallen off the bus)": {Index: 3, UUID: "GPU-x", Kind: KindXID, XID: 79},
		"GPU 0 (GPU-y): XID 1234":                            {Index: 0, UUID: "GPU-y", Kind: KindXID, XID: 1234},
		"GPU 1 (GPU-z): double-bit ECC error":                {Index: 1, UUID: "GPU-z", Kind: KindDoubleBitECC},
		"GPU 2 (GPU-w): GPU is lost (fallen off the bus)":    {Index: 2, UUID: "GPU-w", Kind: KindLost},
	} {
		if got := e.String(); got != want {
			t.Errorf("%+v: %q, want %q", e, got, want)
		}
	}
}
