// Package runtimeconfig decides from a GPU node's NVIDIA container toolkit
// configuration whether the container runtime would hand GPUs to an
// unprivileged container that only names them in NVIDIA_VISIBLE_DEVICES.
//
// A tenant container can take that variable from a ConfigMap or Secret whose
// content it controls (envFrom, valueFrom), so admission cannot see every value
// the container will run with. The runtime is where it can be closed for good:
// with accept-nvidia-visible-devices-envvar-when-unprivileged = false the
// toolkit ignores the variable in unprivileged containers and takes the device
// list only from what the device plugin mounted (volume-mounts) or from CDI.
//
// Judge is a pure function of the files' contents; Read gathers them.
package runtimeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"
)

// Keys of the toolkit's config.toml (NVIDIA/nvidia-container-toolkit,
// internal/config), top level.
const (
	// KeyAcceptEnvvar: honour NVIDIA_VISIBLE_DEVICES in unprivileged
	// containers. The toolkit's default when the key (or the file) is absent is
	// true.
	KeyAcceptEnvvar = "accept-nvidia-visible-devices-envvar-when-unprivileged"
	// KeyAcceptVolumeMounts: take the device list from the /dev/null mounts
	// under /var/run/nvidia-container-devices the device plugin adds
	// (DEVICE_LIST_STRATEGY=volume-mounts). Default false. It is tried first;
	// without such mounts (a pod without a GPU request) the toolkit falls back
	// to the variable, subject to KeyAcceptEnvvar.
	KeyAcceptVolumeMounts = "accept-nvidia-visible-devices-as-volume-mounts"
	// KeyMode is nvidia-container-runtime.mode: auto (default), legacy, cdi,
	// csv. Every mode reads device requests from the variable under the same
	// KeyAcceptEnvvar rule (in cdi mode it becomes nvidia.com/gpu=<id>), so
	// the mode does not change the verdict; it is reported.
	KeyMode = "nvidia-container-runtime.mode"
)

// Default locations of the toolkit's configuration on a node.
const (
	// PathPackage is where the distribution packages put it (the hook and
	// runtime read it unless XDG_CONFIG_HOME says otherwise).
	PathPackage = "/etc/nvidia-container-runtime/config.toml"
	// PathGPUOperator is where the GPU Operator's toolkit container installs
	// it (its runtime wrappers set XDG_CONFIG_HOME=/usr/local/nvidia/toolkit/.config).
	PathGPUOperator = "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"
	// PathDriverRoot is read first by the runtime hook when the driver runs
	// in a container (the GPU Operator's driver container, /run/nvidia/driver).
	PathDriverRoot = "/run/nvidia/driver/etc/nvidia-container-runtime/config.toml"
)

// DefaultPaths are the files the agent judges unless told otherwise.
var DefaultPaths = []string{PathPackage, PathGPUOperator, PathDriverRoot}

// Device-plugin device list strategies (NVIDIA k8s-device-plugin
// DEVICE_LIST_STRATEGY / --device-list-strategy).
const (
	StrategyEnvvar         = "envvar"
	StrategyVolumeMounts   = "volume-mounts"
	StrategyCDIAnnotations = "cdi-annotations"
	StrategyCDICRI         = "cdi-cri"
)

// Reasons of a verdict: the Node condition's reason.
const (
	// ReasonEnvvarIgnored: every configuration file found sets KeyAcceptEnvvar
	// = false. The only safe reason.
	ReasonEnvvarIgnored = "EnvvarIgnoredWhenUnprivileged"
	// ReasonEnvvarAccepted: a file sets KeyAcceptEnvvar = true.
	ReasonEnvvarAccepted = "EnvvarAcceptedWhenUnprivileged"
	// ReasonEnvvarDefault: a file leaves KeyAcceptEnvvar out: the toolkit's
	// default, true.
	ReasonEnvvarDefault = "EnvvarAcceptedByDefault"
	// ReasonConfigMissing: no file at any of the paths: the toolkit's
	// defaults (true) if it is installed; gpuvc passes a node only on
	// evidence.
	ReasonConfigMissing = "ToolkitConfigMissing"
	// ReasonConfigUnreadable: a file exists but cannot be read.
	ReasonConfigUnreadable = "ToolkitConfigUnreadable"
	// ReasonConfigInvalid: a file is not TOML the toolkit would accept for
	// these keys (the toolkit then fails, or falls back to its defaults).
	ReasonConfigInvalid = "ToolkitConfigInvalid"
)

// File is one candidate configuration file as read on the node. Err is nil
// when Data was read; an error satisfying errors.Is(err, fs.ErrNotExist) when
// there is no such file.
type File struct {
	Path string
	Data []byte
	Err  error
}

// Input is everything the verdict depends on.
type Input struct {
	// Files are the candidate configuration files, in the order they are
	// reported.
	Files []File
	// DeviceListStrategy is the device plugin's DEVICE_LIST_STRATEGY when
	// known ("" unknown; comma-separated values allowed). It never makes a
	// node unsafe or safe; it only adds warnings about GPU pods that would get
	// no GPU.
	DeviceListStrategy string
}

// Verdict says whether the runtime would honour NVIDIA_VISIBLE_DEVICES from an
// unprivileged container.
type Verdict struct {
	// Safe: it would not.
	Safe bool
	// Reason is one of the Reason constants: why, as a condition reason.
	Reason string
	// File is the file the reason is about ("" for ReasonConfigMissing).
	File string
	// Message names the file, the key and its value, and for an unsafe
	// verdict the fix.
	Message string
	// Warnings are problems that are no escape: GPU pods that would get no
	// GPU with this combination.
	Warnings []string
}

// Fix is what makes a node pass, in words.
const Fix = "set " + KeyAcceptEnvvar + " = false and " + KeyAcceptVolumeMounts + " = true in the toolkit's config.toml " +
	"and run the device plugin with DEVICE_LIST_STRATEGY=volume-mounts (GPU Operator: toolkit.env " +
	"ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false and ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true, " +
	"devicePlugin.env DEVICE_LIST_STRATEGY=volume-mounts; or CDI with the envvar still refused)"

// settings are the keys gpuvc reads; pointers tell absent from false.
type settings struct {
	AcceptEnvvar       *bool `toml:"accept-nvidia-visible-devices-envvar-when-unprivileged"`
	AcceptVolumeMounts *bool `toml:"accept-nvidia-visible-devices-as-volume-mounts"`
	Runtime            struct {
		Mode *string `toml:"mode"`
	} `toml:"nvidia-container-runtime"`
}

// judged is the verdict about one file.
type judged struct {
	verdict Verdict
	s       settings
}

// Judge decides. Every file found is judged (which one the runtime reads
// depends on how containerd or CRI-O calls it, which the agent cannot see): the
// node is safe only if at least one file exists and every file found sets
// KeyAcceptEnvvar = false. The first unsafe file, in Files order, is the
// reason.
func Judge(in Input) Verdict {
	var safe []judged
	var missing []string
	for _, f := range in.Files {
		if f.Err != nil && errors.Is(f.Err, fs.ErrNotExist) {
			missing = append(missing, f.Path)
			continue
		}
		j := judgeFile(f)
		if !j.verdict.Safe {
			return j.verdict
		}
		safe = append(safe, j)
	}
	if len(safe) == 0 {
		return Verdict{Reason: ReasonConfigMissing, Message: fmt.Sprintf(
			"no NVIDIA container toolkit configuration at %s: the toolkit's defaults honour NVIDIA_VISIBLE_DEVICES from unprivileged containers (%s = true), so a pod without a GPU request can name every GPU of the node; %s (on a node whose runtime uses no NVIDIA hook at all, a file with just %s = false passes)",
			strings.Join(missing, ", "), KeyAcceptEnvvar, Fix, KeyAcceptEnvvar)}
	}
	v := safe[0].verdict
	var files []string
	for _, j := range safe {
		files = append(files, j.verdict.File)
		v.Warnings = append(v.Warnings, warnings(j.verdict.File, j.s, in.DeviceListStrategy)...)
	}
	v.Message = fmt.Sprintf("%s = false in %s: the runtime ignores NVIDIA_VISIBLE_DEVICES in unprivileged containers", KeyAcceptEnvvar, strings.Join(files, ", "))
	return v
}

func judgeFile(f File) judged {
	if f.Err != nil {
		return judged{verdict: Verdict{Reason: ReasonConfigUnreadable, File: f.Path, Message: fmt.Sprintf(
			"cannot read %s (%v): gpuvc cannot tell whether the runtime honours NVIDIA_VISIBLE_DEVICES from unprivileged containers; make it readable to the agent (mount it read-only), and %s",
			f.Path, f.Err, Fix)}}
	}
	var s settings
	if _, err := toml.Decode(string(f.Data), &s); err != nil {
		return judged{verdict: Verdict{Reason: ReasonConfigInvalid, File: f.Path, Message: fmt.Sprintf(
			"%s is not a toolkit configuration gpuvc can read (%v): %s", f.Path, err, Fix)}}
	}
	mode := "auto"
	if s.Runtime.Mode != nil {
		mode = *s.Runtime.Mode
	}
	switch {
	case s.AcceptEnvvar == nil:
		return judged{s: s, verdict: Verdict{Reason: ReasonEnvvarDefault, File: f.Path, Message: fmt.Sprintf(
			"%s does not set %s, whose default is true: the runtime (%s = %q) gives an unprivileged container the GPUs it names in NVIDIA_VISIBLE_DEVICES, even without a GPU request; %s",
			f.Path, KeyAcceptEnvvar, KeyMode, mode, Fix)}}
	case *s.AcceptEnvvar:
		return judged{s: s, verdict: Verdict{Reason: ReasonEnvvarAccepted, File: f.Path, Message: fmt.Sprintf(
			"%s sets %s = true: the runtime (%s = %q) gives an unprivileged container the GPUs it names in NVIDIA_VISIBLE_DEVICES, even without a GPU request; %s",
			f.Path, KeyAcceptEnvvar, KeyMode, mode, Fix)}}
	}
	return judged{s: s, verdict: Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: f.Path}}
}

// warnings are the combinations of a safe file under which GPU pods get no GPU.
func warnings(path string, s settings, strategy string) []string {
	mounts := s.AcceptVolumeMounts != nil && *s.AcceptVolumeMounts
	mode := ""
	if s.Runtime.Mode != nil {
		mode = *s.Runtime.Mode
	}
	var out []string
	strategies := map[string]bool{}
	for _, st := range strings.Split(strategy, ",") {
		if st = strings.TrimSpace(st); st != "" {
			strategies[st] = true
		}
	}
	cdi := strategies[StrategyCDIAnnotations] || strategies[StrategyCDICRI]
	if strategies[StrategyEnvvar] && !strategies[StrategyVolumeMounts] && !cdi {
		out = append(out, fmt.Sprintf("the device plugin passes devices only in NVIDIA_VISIBLE_DEVICES (DEVICE_LIST_STRATEGY=envvar), which %s ignores in unprivileged containers: GPU pods get no GPU; use DEVICE_LIST_STRATEGY=volume-mounts", path))
	}
	if strategies[StrategyVolumeMounts] && !mounts {
		out = append(out, fmt.Sprintf("the device plugin passes devices as volume mounts (DEVICE_LIST_STRATEGY=volume-mounts) but %s does not set %s = true: GPU pods get no GPU", path, KeyAcceptVolumeMounts))
	}
	if len(strategies) == 0 && !mounts && mode != "cdi" {
		out = append(out, fmt.Sprintf("%s sets neither %s = true nor %s = \"cdi\": unless the device plugin uses CDI, unprivileged GPU pods get no GPU", path, KeyAcceptVolumeMounts, KeyMode))
	}
	return out
}

// Read reads each path under root ("" or "/" for the node's own file system;
// the agent's container mounts the node's folders under a root). The Files
// carry the node's paths.
func Read(root string, paths []string) []File {
	out := make([]File, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the node's path is in File.Path; not the container's
			}
		}
		out = append(out, File{Path: p, Data: data, Err: err})
	}
	return out
}

// Simulated is the toolkit configuration of gpuvc's simulated GPU nodes (kind,
// kwok): the hardened one NVIDIA documents, so simulated nodes pass.
const Simulated = KeyAcceptEnvvar + " = false\n" + KeyAcceptVolumeMounts + " = true\n"

// SimulatedPath is the name simulated verdicts give the simulated file.
const SimulatedPath = "simulated:" + PathPackage
