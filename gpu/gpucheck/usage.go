package gpucheck

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuvc/gpuvc/gpu/usage"
)

// Tolerances between the agent's reading and nvidia-smi's, taken a few
// milliseconds apart: nvidia-smi rounds MiB up, and utilization is NVML's
// average over its last sample period (1/6 s to 1 s), which moves between
// the two reads only while the load starts or stops.
const (
	memoryToleranceMiB = 2
	utilTolerance      = 10 // percentage points
	// busyAtLeast is the utilization a matrix-product loop must show.
	busyAtLeast = 50
)

var usageFields = []string{"uuid", "utilization.gpu", "memory.used", "memory.total"}

// usageStep reads utilization and memory as the agent's metrics do
// (usage.Read) beside nvidia-smi --query-gpu at the same moments, first idle,
// then while a matrix-product loop runs on the first GPU.
func usageStep(ctx context.Context, c *Config, f *facts, s *Step) {
	s.Reference = "nvidia-smi --query-gpu=" + strings.Join(usageFields, ",") + ", read right after the agent's reading"
	if len(f.inv.GPUs) == 0 {
		s.Err = "no inventory from the first step"
		return
	}
	sample(ctx, c, s, "idle", false)
	if c.Workloads == nil {
		s.add("", "load", "", "", NotRead, "no workload runner: the loaded phase was not run")
		return
	}
	target := f.inv.GPUs[0]
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	began := time.Now()
	stop, err := c.Workloads.Busy(startCtx, target.UUID)
	cancel()
	if err != nil {
		s.add(gpuName(target.Index), "load", "", "", NotRead, "the matrix-product loop did not start: "+err.Error())
		return
	}
	s.note("load: bf16 8192×8192 matrix products in a loop on %s (%s), running after %s", gpuName(target.Index), target.UUID, time.Since(began).Round(time.Millisecond))
	peak := sample(ctx, c, s, "loaded", true)
	stop()
	if peak[target.UUID] < busyAtLeast {
		s.add(gpuName(target.Index), "loaded: highest utilization", strconv.FormatFloat(peak[target.UUID], 'f', 0, 64)+" %", fmt.Sprintf("≥ %d %%", busyAtLeast), Differs, "the agent did not see the load")
	}
}

// sample takes c.Samples readings and returns each GPU's highest utilization.
func sample(ctx context.Context, c *Config, s *Step, phase string, loaded bool) map[string]float64 {
	peak := map[string]float64{}
	for i := range c.Samples {
		if i > 0 || loaded {
			select {
			case <-time.After(c.Interval):
			case <-ctx.Done():
				s.add("", phase, "", "", NotRead, ctx.Err().Error())
				return peak
			}
		}
		agent, err := usage.Read(c.Lib)
		if err != nil {
			s.add("", fmt.Sprintf("%s #%d", phase, i+1), "", "", Differs, "the agent's reading failed: "+err.Error())
			continue
		}
		smi, err := c.SMI.Query(ctx, usageFields...)
		if err != nil {
			s.add("", fmt.Sprintf("%s #%d", phase, i+1), "", "", NotRead, err.Error())
			continue
		}
		for _, a := range agent {
			if a.MIG {
				continue // nvidia-smi --query-gpu reports whole GPUs only
			}
			ref := rowFor(smi, a.UUID)
			name := gpuName(a.GPU)
			if ref == nil {
				s.add(name, phase, a.UUID, "(nvidia-smi lists no GPU with it)", Differs, "")
				continue
			}
			at := fmt.Sprintf("%s #%d", phase, i+1)
			if a.UtilizationPercent != nil {
				peak[a.UUID] = max(peak[a.UUID], *a.UtilizationPercent)
				within(s, name, at+": utilization (%)", *a.UtilizationPercent, ref["utilization.gpu"], utilTolerance)
			} else {
				s.add(name, at+": utilization (%)", "(none)", ref["utilization.gpu"], Differs, "the agent reported no utilization for a whole GPU")
			}
			within(s, name, at+": memory used (MiB)", float64(a.MemoryUsedBytes)/(1<<20), ref["memory.used"], memoryToleranceMiB)
			within(s, name, at+": memory total (MiB)", float64(a.MemoryTotalBytes)/(1<<20), ref["memory.total"], memoryToleranceMiB)
		}
	}
	return peak
}

// within adds a row that is OK when gpuvc's value is within tol of nvidia-smi's.
func within(s *Step, gpu, field string, got float64, ref string, tol float64) {
	want, err := strconv.ParseFloat(ref, 64)
	g := strconv.FormatFloat(got, 'f', 1, 64)
	if err != nil {
		s.add(gpu, field, g, ref, NotRead, "nvidia-smi's value is not a number")
		return
	}
	st := OK
	if d := got - want; d > tol || d < -tol {
		st = Differs
	}
	s.add(gpu, field, g, ref, st, fmt.Sprintf("tolerance ±%g", tol))
}

func rowFor(rows []map[string]string, uuid string) map[string]string {
	for _, r := range rows {
		if r["uuid"] == uuid {
			return r
		}
	}
	return nil
}
