// Package reserve is the library of `gpuvc reserve`, the entrypoint of GPU
// reservation pods. A reservation pod asks for nvidia.com/gpu: 1; the device
// plugin gives its container exactly one GPU. The pod finds out which one,
// writes the GPU's UUID to its own annotation so the scheduler side can place
// fractional pods on that GPU, and then holds the GPU until it is terminated.
package reserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
)

const (
	// FieldManager names the reservation pod's writes.
	FieldManager = "gpuvc-reserve"
	// PodNameEnv and PodNamespaceEnv carry the pod's identity (downward API:
	// metadata.name and metadata.namespace).
	PodNameEnv      = "POD_NAME"
	PodNamespaceEnv = "POD_NAMESPACE"
)

// NVMLUUID returns the UUID of the single GPU NVML sees in this container.
// Zero or several GPUs are errors that say how many were seen and why that is
// wrong. NVML is always shut down again; a missing driver wraps
// inventory.ErrNoDriver; a panicking nvml.Interface becomes an error.
func NVMLUUID(lib nvml.Interface) (uuid string, err error) {
	if lib == nil {
		return "", errors.New("no NVML library given")
	}
	defer func() {
		if r := recover(); r != nil {
			uuid, err = "", fmt.Errorf("NVML call panicked: %v", r)
		}
	}()
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "", inventory.ErrNoDriver
	default:
		return "", fmt.Errorf("NVML init: %v (%d)", ret.Error(), int32(ret))
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			err = fmt.Errorf("NVML shutdown: %v (%d)", ret.Error(), int32(ret))
		}
	}()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("NVML device count: %v (%d)", ret.Error(), int32(ret))
	}
	if err := checkCount(n, "NVML reports"); err != nil {
		return "", err
	}
	d, ret := lib.DeviceGetHandleByIndex(0)
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("NVML device 0: %v (%d)", ret.Error(), int32(ret))
	}
	uuid, ret = d.GetUUID()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("NVML device 0 UUID: %v (%d)", ret.Error(), int32(ret))
	}
	return uuid, nil
}

func checkCount(n int, who string) error {
	switch {
	case n == 0:
		return fmt.Errorf("%s 0 GPUs: a reservation pod must see exactly one — does it request nvidia.com/gpu: 1, and does its node run the NVIDIA device plugin and container runtime?", who)
	case n > 1:
		return fmt.Errorf("%s %d GPUs: a reservation pod must see exactly one, the GPU it holds; more means it can see GPUs it did not get from the device plugin (NVIDIA_VISIBLE_DEVICES=all, a privileged container, or a request above nvidia.com/gpu: 1)", who, n)
	}
	return nil
}

// VisibleDevicesUUID returns the single GPU a device plugin allocated, from the
// value of NVIDIA_VISIBLE_DEVICES (set reports whether the variable exists).
// It is how simulated nodes, which have no NVML, identify the GPU.
func VisibleDevicesUUID(value string, set bool) (string, error) {
	if !set {
		return "", fmt.Errorf("%s is not set: on a simulated node the gpuvc device plugin sets it when the pod requests nvidia.com/gpu: 1", contract.EnvVisibleDevices)
	}
	value = strings.TrimSpace(value)
	switch value {
	case "", "void", "none":
		return "", fmt.Errorf("%s=%q names no GPU: the pod got none from the device plugin", contract.EnvVisibleDevices, value)
	case "all":
		return "", fmt.Errorf("%s=all: a reservation pod must see exactly one GPU, not all of the node's", contract.EnvVisibleDevices)
	}
	ids := strings.Split(value, ",")
	if err := checkCount(len(ids), contract.EnvVisibleDevices+"="+value+" names"); err != nil {
		return "", err
	}
	if !strings.HasPrefix(value, "GPU-") && !strings.HasPrefix(value, "MIG-") {
		return "", fmt.Errorf("%s=%q is not a GPU UUID (GPU-… or MIG-…): the device plugin must pass UUIDs, not indexes", contract.EnvVisibleDevices, value)
	}
	return value, nil
}

// IsSimulated reports whether a UUID names a simulated GPU: the gpuvc device
// plugin and gpu/inventory.Simulate hand out GPU-sim-… and MIG-sim-…, the
// share controller records GPU-sim-<node>-<n>. No real GPU has such a UUID.
func IsSimulated(uuid string) bool {
	return strings.HasPrefix(uuid, "GPU-sim-") || strings.HasPrefix(uuid, "MIG-sim-")
}

// DetectUUID finds the pod's GPU without being told whether the node is
// simulated: NVML first; only when there is no NVIDIA driver and the device
// plugin allocated a simulated GPU (NVIDIA_VISIBLE_DEVICES holds one
// GPU-sim-/MIG-sim- UUID, as the gpuvc device plugin sets it) is that GPU
// used. Any other failure is NVML's error.
func DetectUUID(lib nvml.Interface, lookupEnv func(string) (string, bool)) (string, error) {
	uuid, err := NVMLUUID(lib)
	if err == nil || !errors.Is(err, inventory.ErrNoDriver) {
		return uuid, err
	}
	if v, ok := lookupEnv(contract.EnvVisibleDevices); ok && IsSimulated(strings.TrimSpace(v)) {
		return VisibleDevicesUUID(v, ok)
	}
	return "", err
}

// Options configure Run.
type Options struct {
	Client    kubernetes.Interface
	Namespace string // the reservation pod's namespace
	Name      string // the reservation pod's name
	// UUID finds the pod's GPU: NVMLUUID on GPU nodes, VisibleDevicesUUID on
	// simulated ones.
	UUID func() (string, error)
	// ReachTimeout bounds the wait for an API server that cannot be reached
	// (0: until ctx ends); then Run fails and the kubelet restarts the pod.
	ReachTimeout time.Duration
}

// Run finds the pod's GPU, annotates the pod with its UUID and then holds the
// GPU until ctx ends (SIGTERM), when it returns nil.
func Run(ctx context.Context, o Options) error {
	if o.Namespace == "" || o.Name == "" {
		return fmt.Errorf("the reservation pod's namespace and name are required (%s and %s from the downward API)", PodNamespaceEnv, PodNameEnv)
	}
	uuid, err := o.UUID()
	if err != nil {
		return fmt.Errorf("finding the reserved GPU: %w", err)
	}
	logr.FromContextOrDiscard(ctx).Info("recording the reserved GPU on the pod", "pod", o.Namespace+"/"+o.Name, "uuid", uuid)
	actx, cancel := ctx, context.CancelFunc(func() {})
	if o.ReachTimeout > 0 {
		actx, cancel = context.WithTimeout(ctx, o.ReachTimeout)
	}
	err = Annotate(actx, o.Client, o.Namespace, o.Name, uuid)
	cancel()
	if err != nil {
		return err
	}
	logr.FromContextOrDiscard(ctx).Info("holding GPU until terminated", "pod", o.Namespace+"/"+o.Name, "uuid", uuid)
	<-ctx.Done()
	return nil
}

// Annotate sets UUIDAnnotation on the pod with a merge patch (field manager
// FieldManager). The pod must exist: the patch never creates one. The patch
// carries the pod's UID and resourceVersion, so it applies only to the pod
// version the decision was made on: the first writer of the annotation wins,
// and a concurrent writer (the share controller on simulated nodes) makes
// Annotate read again and decide again. An annotation naming another GPU is an
// error, never overwritten nor kept. Transient API errors are
// retried briefly; while the API server cannot be reached at all (a new
// pod's NetworkPolicy not applied yet), Annotate keeps trying until ctx ends.
// Needs get and patch on pods in its namespace.
func Annotate(ctx context.Context, c kubernetes.Interface, namespace, name, uuid string) error {
	return untilReached(ctx, func() error { return annotate(ctx, c, namespace, name, uuid) })
}

func annotate(ctx context.Context, c kubernetes.Interface, namespace, name, uuid string) error {
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
		var pe *patchError
		return errors.As(err, &pe) && (apierrors.IsConflict(pe.err) || retriable(pe.err))
	}, func() error { return annotateOnce(ctx, c, namespace, name, uuid) })
	if pe := (*patchError)(nil); errors.As(err, &pe) {
		return fmt.Errorf("annotating pod %s/%s with %s=%s: %w", namespace, name, contract.AnnotationGPUUUID, uuid, pe.err)
	}
	return err
}

// patchError is a failed patch: the one failure Annotate may retry.
type patchError struct{ err error }

func (e *patchError) Error() string { return e.err.Error() }
func (e *patchError) Unwrap() error { return e.err }

// annotateOnce reads the pod, decides and patches.
func annotateOnce(ctx context.Context, c kubernetes.Interface, namespace, name, uuid string) error {
	pods := c.CoreV1().Pods(namespace)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s/%s not found: %s and %s must name this reservation pod", namespace, name, PodNamespaceEnv, PodNameEnv)
	}
	if err != nil {
		return fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
	}
	switch old := pod.Annotations[contract.AnnotationGPUUUID]; {
	case old == uuid:
		return nil
	case old != "":
		// A container restart keeps the pod's GPU, so a different UUID was
		// written by someone else; share pods may already use it. Never kept
		// silently, simulated or not: this container runs, so its allocation
		// is the truth, and a share told another ID would name a GPU the
		// kubelet did not give (the share controller records IDs only on kwok
		// nodes, where no container runs).
		return fmt.Errorf("pod %s/%s already records %s=%s but this container holds GPU %s: refusing to change it (share pods may use it); delete the reservation pod so its shares are placed again", namespace, name, contract.AnnotationGPUUUID, old, uuid)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			// Preconditions: this pod (not a newer one of the same name), this version.
			"uid":             pod.UID,
			"resourceVersion": pod.ResourceVersion,
			"annotations":     map[string]string{contract.AnnotationGPUUUID: uuid},
		},
	})
	if err != nil {
		return err
	}
	if _, err := pods.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return &patchError{err}
	}
	return nil
}

func retriable(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}
