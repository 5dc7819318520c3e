// Package nodeagent is the library of `gpuvc agent`: it reads a node's GPU
// inventory (NVML, or a simulated spec) and publishes it on the node's Node
// object — a JSON annotation plus GPU Feature Discovery–compatible labels
// where GFD does not run — with server-side apply.
package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Agent publishes a node's inventory once or periodically.
type Agent struct {
	Source    inventory.Source
	Publisher Publisher
	// Interval between runs of Run; must be positive.
	Interval time.Duration
}

// Once reads the inventory and publishes it. Errors reading the inventory
// wrap the source's error (errors.Is(err, inventory.ErrNoDriver) on a node
// without the NVIDIA driver).
func (a Agent) Once(ctx context.Context) (Result, error) {
	inv, err := a.Source.Inventory()
	if err != nil {
		return Result{Node: a.Publisher.NodeName}, fmt.Errorf("reading the GPUs of node %q: %w", a.Publisher.NodeName, err)
	}
	return a.Publisher.Publish(ctx, inv)
}

// Run publishes now and then every Interval until ctx ends, when it returns
// nil. A failed run is logged (logger from ctx) and retried at the next tick,
// except a missing NVIDIA driver, which no retry fixes: Run returns it.
func (a Agent) Run(ctx context.Context) error {
	if a.Interval <= 0 {
		return fmt.Errorf("agent interval %v must be positive", a.Interval)
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", a.Publisher.NodeName)
	ticker := time.NewTicker(a.Interval)
	defer ticker.Stop()
	for {
		res, err := a.Once(ctx)
		switch {
		case errors.Is(err, inventory.ErrNoDriver):
			return err
		case err != nil && ctx.Err() == nil:
			log.Error(err, "publishing the GPU inventory failed; retrying", "in", a.Interval)
		case err == nil && res.Changed:
			log.Info("published GPU inventory", "gpus", res.GPUs, "labels", len(res.Labels), "gfd", res.GFD, "gfdEvidence", res.GFDEvidence)
		case err == nil:
			log.V(1).Info("GPU inventory unchanged", "gpus", res.GPUs)
		}
		if ctx.Err() != nil { // a ready tick must not win over the end
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}
