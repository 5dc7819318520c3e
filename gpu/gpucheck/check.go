package gpucheck

import (
	"context"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Config is what the check reads and starts.
type Config struct {
	// Lib is NVML: nvml.New() on a machine, a mock in tests.
	Lib nvml.Interface
	// SMI is nvidia-smi.
	SMI SMI
	// Workloads start the load and the allocation the usage and fraction
	// steps watch; nil skips what needs them, and says so.
	Workloads Workloads
	// Machine names the machine in the report.
	Machine string
	// Samples is how many readings each usage phase takes (5 when zero), one
	// per Interval (1 s when zero).
	Samples  int
	Interval time.Duration
	// EventWait is how long the event step waits for XID/ECC events (3 s
	// when zero).
	EventWait time.Duration
	// Strategy is the agent's MIG strategy for the labels (mixed when empty,
	// the agent's default).
	Strategy inventory.Strategy
	// ReserveMiB is the fraction limits' reserve (the Team default when zero).
	ReserveMiB int64
	// ProfileName reads a MIG profile's name (ProfileName when nil). go-nvml's
	// mocks cannot answer the v2 profile info call — their handler calls the
	// real library — so tests give their own.
	ProfileName func(d nvml.Device, profileIndex int) string
	// Root is where the node's file system is mounted ("/" when empty): the
	// runtime step reads the NVIDIA toolkit's configuration under it.
	Root string
	// Progress, if set, hears each step's name as it starts.
	Progress func(step string)
}

// DefaultReserveMiB is spec.gpuSharing.fractionLimits.reserveMiB's default
// (api/v1alpha1.DefaultFractionReserveMiB; a test keeps them equal).
const DefaultReserveMiB = 1024

func (c *Config) defaults() {
	if c.Samples <= 0 {
		c.Samples = 5
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.EventWait <= 0 {
		c.EventWait = 3 * time.Second
	}
	if c.Strategy == "" {
		c.Strategy = inventory.StrategyMixed
	}
	if c.ReserveMiB == 0 {
		c.ReserveMiB = DefaultReserveMiB
	}
}

// facts are what the first step learns and later steps use.
type facts struct {
	inv inventory.Inventory
	smi smiLog
	// computeCap is nvidia-smi's compute_cap per UUID (the XML has none).
	computeCap map[string]string
}

// Run runs every step and returns the report; a step that cannot run says
// why in its row or Err and the others still run.
func Run(ctx context.Context, c Config) Report {
	c.defaults()
	r := Report{Started: time.Now(), Machine: c.Machine}
	var f facts
	steps := []struct {
		name string
		run  func(context.Context, *Config, *facts, *Step)
	}{
		{"Inventory", inventoryStep},
		{"Node labels", labelsStep},
		{"MIG catalog", migStep},
		{"Utilization and memory", usageStep},
		{"XID and ECC events", eventsStep},
		{"Fraction limits", fractionStep},
		{"Container runtime", runtimeStep},
	}
	for _, s := range steps {
		if c.Progress != nil {
			c.Progress(s.name)
		}
		st := Step{Name: s.name}
		began := time.Now()
		func() {
			defer func() {
				if p := recover(); p != nil {
					st.Err = fmt.Sprintf("panicked: %v", p)
				}
			}()
			s.run(ctx, &c, &f, &st)
		}()
		st.Took = time.Since(began)
		r.Steps = append(r.Steps, st)
		if st.Err != "" && len(f.inv.GPUs) == 0 {
			break // every later step reads the GPUs the first one found
		}
	}
	r.Took = time.Since(r.Started)
	return r
}

func gpuName(i int) string { return fmt.Sprintf("GPU %d", i) }
