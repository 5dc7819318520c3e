package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// GPU shares (KAI-Scheduler compatible annotations). A pod annotated with
// gpu-fraction or gpu-memory asks for part of one GPU. It requests no device
// itself: it is created with the scheduling gate gpuvc.dev/gpu-share and reads
// its GPU from a ConfigMap the share controller fills before removing the gate.

// share is a validated share request.
type share struct {
	fraction  string // canonical, e.g. "0.5"; "" when memory is set
	memoryMiB int64
}

func hasShareAnnotations(pod *corev1.Pod) bool {
	_, f := pod.Annotations[contract.AnnotationKAIFraction]
	_, m := pod.Annotations[contract.AnnotationKAIMemory]
	return f || m
}

// A fraction is a plain decimal: this rules out NaN, Inf, signs, exponents and
// hex floats that strconv.ParseFloat would accept.
var decimal = regexp.MustCompile(`^[0-9]*\.?[0-9]+$`)

// parseShare validates the share annotations. ok is false when the pod asks for
// no share.
func parseShare(in *Input) (s share, ok bool, reason, message string) {
	a := in.Pod.Annotations
	frac, hasFrac := a[contract.AnnotationKAIFraction]
	mem, hasMem := a[contract.AnnotationKAIMemory]
	if !hasFrac && !hasMem {
		return share{}, false, "", ""
	}
	if hasFrac && hasMem {
		return share{}, true, ReasonInvalidGPUShare, fmt.Sprintf(
			"metadata.annotations sets both %s=%q and %s=%q (limit: one of them); keep only one",
			contract.AnnotationKAIFraction, frac, contract.AnnotationKAIMemory, mem)
	}
	if n, set := a[contract.AnnotationKAIFractionDevices]; set && n != "1" {
		return share{}, true, ReasonInvalidGPUShare, fmt.Sprintf(
			"metadata.annotations[%s]=%q is not supported (limit: a share of 1 GPU); remove it, or request whole GPUs with %s",
			contract.AnnotationKAIFractionDevices, n, contract.ResourceGPU)
	}
	if hasFrac {
		f, err := strconv.ParseFloat(frac, 64)
		if !decimal.MatchString(frac) || err != nil || math.IsNaN(f) || f <= 0 || f >= 1 {
			return share{}, true, ReasonInvalidGPUShare, fmt.Sprintf(
				"metadata.annotations[%s]=%q is not a fraction of a GPU (limit: a decimal number greater than 0 and less than 1, e.g. \"0.5\"); fix the value, or request %s: 1 for a whole GPU",
				contract.AnnotationKAIFraction, frac, contract.ResourceGPU)
		}
		return share{fraction: strconv.FormatFloat(f, 'f', -1, 64)}, true, "", ""
	}
	m, err := strconv.ParseInt(mem, 10, 64)
	if !decimal.MatchString(mem) || err != nil || m <= 0 {
		return share{}, true, ReasonInvalidGPUShare, fmt.Sprintf(
			"metadata.annotations[%s]=%q is not a memory size (limit: a whole number of MiB greater than 0, e.g. \"20000\"); fix the value",
			contract.AnnotationKAIMemory, mem)
	}
	if limit := in.Policy.PoolGPUMemoryMiB; limit > 0 && m >= limit {
		return share{}, true, ReasonInvalidGPUShare, fmt.Sprintf(
			"metadata.annotations[%s]=%q MiB is not less than the %d MiB of one GPU of pool %s (limit: below %d MiB); ask for less, or request %s: 1 for a whole GPU",
			contract.AnnotationKAIMemory, mem, limit, in.Policy.Pool, limit, contract.ResourceGPU)
	}
	return share{memoryMiB: m}, true, "", ""
}

// checkShare refuses invalid share requests, shares when the team has none, and
// shares combined with device requests.
func checkShare(in *Input) (string, string, bool) {
	_, ok, reason, message := parseShare(in)
	if !ok {
		return "", "", false
	}
	if !in.Policy.FractionsEnabled {
		return ReasonFractionsDisabled, fmt.Sprintf(
			"metadata.annotations asks for a GPU share (%s/%s) but team %s has GPU sharing disabled (limit: whole GPUs or MIG); request %s or a MIG profile, or ask the platform team to enable fractions",
			contract.AnnotationKAIFraction, contract.AnnotationKAIMemory, in.Policy.Team, contract.ResourceGPU), true
	}
	if reason != "" {
		return reason, message, true
	}
	for _, wc := range workloadContainers(in.Pod) {
		if names := gpuResourceNames(wc.c); len(names) > 0 {
			q := deviceQuantity(wc.c, names[0])
			return ReasonShareWithGPUResource, fmt.Sprintf(
				"metadata.annotations asks for a GPU share together with %s.resources.limits[%s]=%s (limit: a share or devices, not both); remove the annotation or the resource",
				wc.path, names[0], q.String()), true
		}
	}
	if in.Pod.Name == "" {
		return ReasonShareNeedsName, "a pod asking for a GPU share needs metadata.name (generateName is not supported: the share ConfigMap is named after the pod); set a name", true
	}
	return "", "", false
}

// shareConfigMapName names a pod's share ConfigMap; long names are shortened with
// a hash so the result stays a valid name.
func shareConfigMapName(pod string) string {
	const maxLen = 253
	name := contract.ShareConfigMapPrefix + pod
	if len(name) <= maxLen {
		return name
	}
	sum := sha256.Sum256([]byte(pod))
	return name[:maxLen-11] + "-" + hex.EncodeToString(sum[:])[:10]
}

// mutateShare gates a share pod and points every container at its ConfigMap.
func mutateShare(in *Input) []Note {
	if _, ok, reason, _ := parseShare(in); !ok || reason != "" {
		return nil
	}
	pod := in.Pod
	cm := shareConfigMapName(pod.Name)
	changed := false
	if !slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.GateGPUShare }) {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: contract.GateGPUShare})
		changed = true
	}
	for _, wc := range workloadContainers(pod) {
		if slices.ContainsFunc(wc.c.EnvFrom, func(e corev1.EnvFromSource) bool { return e.ConfigMapRef != nil && e.ConfigMapRef.Name == cm }) {
			continue
		}
		wc.c.EnvFrom = append(wc.c.EnvFrom, corev1.EnvFromSource{
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}},
		})
		changed = true
	}
	if !changed {
		return nil
	}
	return []Note{{Normal, ReasonGPUShareGated, fmt.Sprintf(
		"waiting for a GPU share: scheduling gate %s added and every container reads its GPU from ConfigMap %s; gpuvc removes the gate once a GPU is assigned",
		contract.GateGPUShare, cm)}}
}
