package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
)

const (
	// DefaultCDIDir is where container runtimes look for CDI specs that
	// change at run time.
	DefaultCDIDir = "/var/run/cdi"
	// CDIKind is the vendor/class of the CDI devices the driver writes: a
	// device ID is "<CDIKind>=<claim UID>-<device name>".
	CDIKind = "k8s.gpu.gpuvc.dev/device"
	// cdiVersion has device annotations (0.6.0); containerd 2.x reads it.
	cdiVersion = "0.6.0"
	// specPrefix starts the file name of a claim's spec: gpuvc-dra-<claim UID>.json.
	specPrefix = "gpuvc-dra-"
	// annotationDevice records on each CDI device which published device it
	// is, so a later prepare sees who holds a device.
	annotationDevice = "gpuvc.dev/dra-device"
)

// cdiSpec is the part of a CDI spec the driver writes: one device per
// allocated device, each setting environment variables.
type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name           string            `json:"name"`
	Annotations    map[string]string `json:"annotations,omitempty"`
	ContainerEdits cdiEdits          `json:"containerEdits"`
}

type cdiEdits struct {
	Env []string `json:"env,omitempty"`
}

// prepared is one device of a claim as the kubelet gets it back.
type prepared struct {
	Request string // the claim's request (or subrequest) it was allocated for
	Device  Device
	// Admin: allocated with adminAccess, which may share a device in use; not
	// recorded as its holder.
	Admin bool
}

// claimSpec is the CDI spec of one claim's devices. Each device sets
// NVIDIA_VISIBLE_DEVICES to the UUIDs of every device of its request (the
// same value for all of them, as the device plugin gives a container asking
// for several GPUs) and GPUVC_DRA_DEVICE_<device>=<its UUID>.
func claimSpec(claim types.UID, devs []prepared) cdiSpec {
	byRequest := map[string][]string{}
	for _, p := range devs {
		byRequest[p.Request] = append(byRequest[p.Request], p.Device.UUID)
	}
	spec := cdiSpec{Version: cdiVersion, Kind: CDIKind}
	for _, p := range devs {
		var annotations map[string]string
		if !p.Admin {
			annotations = map[string]string{annotationDevice: p.Device.Name}
		}
		spec.Devices = append(spec.Devices, cdiDevice{
			Name:        cdiName(claim, p.Device.Name),
			Annotations: annotations,
			ContainerEdits: cdiEdits{Env: []string{
				contract.EnvVisibleDevices + "=" + strings.Join(byRequest[p.Request], ","),
				DeviceEnv(p.Device.Name) + "=" + p.Device.UUID,
			}},
		})
	}
	return spec
}

func cdiName(claim types.UID, device string) string { return string(claim) + "-" + device }

// CDIDeviceID is the CDI device a container gets for a claim's device.
func CDIDeviceID(claim types.UID, device string) string {
	return CDIKind + "=" + cdiName(claim, device)
}

// DeviceEnv is the variable that names a device's UUID in a container given
// it: GPUVC_DRA_DEVICE_GPU_4 for gpu-4.
func DeviceEnv(device string) string {
	return contract.EnvDRADevicePrefix + strings.ToUpper(strings.ReplaceAll(device, "-", "_"))
}

// cdiDir holds the driver's claim specs.
type cdiDir string

func (d cdiDir) path(claim types.UID) string {
	return filepath.Join(string(d), specPrefix+string(claim)+".json")
}

// write replaces the claim's spec atomically: the runtime, watching the
// folder, never reads half a file (it reads only *.json and *.yaml).
func (d cdiDir) write(claim types.UID, spec cdiSpec) error {
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(string(d), specPrefix+"*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), d.path(claim))
}

// remove deletes the claim's spec; none is not an error (unprepare is
// idempotent).
func (d cdiDir) remove(claim types.UID) error {
	err := os.Remove(d.path(claim))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// holders maps each device prepared for a claim, as the specs in the folder
// say, to that claim: the driver keeps no other state, so a restarted driver
// still refuses to hand a device to a second claim.
func (d cdiDir) holders() (map[string]types.UID, error) {
	matches, err := filepath.Glob(filepath.Join(string(d), specPrefix+"*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(matches)
	out := map[string]types.UID{}
	for _, m := range matches {
		claim := types.UID(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), specPrefix), ".json"))
		b, err := os.ReadFile(m)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var spec cdiSpec
		if err := json.Unmarshal(b, &spec); err != nil {
			return nil, fmt.Errorf("CDI spec %s: %w", m, err)
		}
		for _, dev := range spec.Devices {
			if name := dev.Annotations[annotationDevice]; name != "" {
				out[name] = claim
			}
		}
	}
	return out, nil
}
