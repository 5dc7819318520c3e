package dra

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/gpuvc/gpuvc/api/contract"
)

// driver prepares the devices of one node's pool. The kubelet plugin helper
// serializes its calls (kubeletplugin.Serialize, on by default).
type driver struct {
	pool    string
	devices map[string]Device // by name
	cdi     cdiDir
	log     logr.Logger

	fatalOnce sync.Once
	fatal     chan error // the first error no retry fixes; Serve returns it
}

var _ kubeletplugin.DRAPlugin = (*driver)(nil)

func newDriver(pool string, devices []Device, cdi cdiDir, log logr.Logger) *driver {
	d := &driver{pool: pool, devices: map[string]Device{}, cdi: cdi, log: log, fatal: make(chan error, 1)}
	for _, dev := range devices {
		d.devices[dev.Name] = dev
	}
	return d
}

// PrepareResourceClaims writes each claim's CDI spec and returns its CDI
// device IDs; a claim that cannot be prepared gets its error (the kubelet
// retries it), the others are prepared.
func (d *driver) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	holders, err := d.cdi.holders()
	if err != nil {
		return nil, fmt.Errorf("reading the prepared claims: %w", err)
	}
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		res, err := d.prepare(c, holders)
		if err != nil {
			res = kubeletplugin.PrepareResult{Err: fmt.Errorf("claim %s/%s: %w", c.Namespace, c.Name, err)}
		}
		out[c.UID] = res
	}
	return out, nil
}

// prepare checks that every device allocated to the claim by this driver is
// one of this node's and held by no other claim, then writes the claim's
// spec. holders gains the claim's devices.
func (d *driver) prepare(c *resourceapi.ResourceClaim, holders map[string]types.UID) (kubeletplugin.PrepareResult, error) {
	if c.Status.Allocation == nil {
		return kubeletplugin.PrepareResult{}, errors.New("not allocated")
	}
	var devs []prepared
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.Driver != contract.DRADriver {
			continue
		}
		if r.Pool != d.pool {
			return kubeletplugin.PrepareResult{}, fmt.Errorf("device %s of pool %s is not on this node (pool %s)", r.Device, r.Pool, d.pool)
		}
		dev, ok := d.devices[r.Device]
		if !ok {
			return kubeletplugin.PrepareResult{}, fmt.Errorf("device %s is not one this node publishes", r.Device)
		}
		admin := r.AdminAccess != nil && *r.AdminAccess
		// The scheduler never allocates a device twice; should it, the
		// driver is the last line of defence.
		if holder, held := holders[dev.Name]; !admin && held && holder != c.UID {
			return kubeletplugin.PrepareResult{}, fmt.Errorf("device %s is prepared for claim %s", dev.Name, holder)
		}
		devs = append(devs, prepared{Request: r.Request, Device: dev, Admin: admin})
	}
	if err := d.cdi.write(c.UID, claimSpec(c.UID, devs)); err != nil {
		return kubeletplugin.PrepareResult{}, fmt.Errorf("writing its CDI spec: %w", err)
	}
	res := kubeletplugin.PrepareResult{Devices: []kubeletplugin.Device{}}
	for _, p := range devs {
		if !p.Admin {
			holders[p.Device.Name] = c.UID
		}
		res.Devices = append(res.Devices, kubeletplugin.Device{
			Requests: []string{p.Request}, PoolName: d.pool, DeviceName: p.Device.Name,
			CDIDeviceIDs: []string{CDIDeviceID(c.UID, p.Device.Name)},
		})
	}
	d.log.Info("prepared", "claim", c.Namespace+"/"+c.Name, "uid", c.UID, "devices", len(devs))
	return res, nil
}

// UnprepareResourceClaims removes each claim's CDI spec.
func (d *driver) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = d.cdi.remove(c.UID)
		d.log.Info("unprepared", "claim", c.String())
	}
	return out, nil
}

// HandleError logs background errors (publishing ResourceSlices); one no
// retry fixes ends Serve.
func (d *driver) HandleError(_ context.Context, err error, msg string) {
	d.log.Error(err, msg)
	if errors.Is(err, kubeletplugin.ErrRecoverable) {
		return
	}
	d.fatalOnce.Do(func() { d.fatal <- fmt.Errorf("%s: %w", msg, err) })
}
