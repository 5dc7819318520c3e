package syncer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuvc/gpuvc/api/contract"
)

// GPU requests. A pod asks for devices with nvidia.com/gpu (whole GPUs) or
// nvidia.com/mig-<profile> (MIG instances, mixed strategy); anything else under
// nvidia.com/ is refused so no unreviewed device type slips through.

// gpuResourceNames lists the nvidia.com/ resources a container asks a non-zero
// quantity of in limits or requests, sorted. Zero counts as not asking: a team's
// LimitRange gives every container without a GPU limit nvidia.com/gpu: 0, before
// admission webhooks run.
func gpuResourceNames(c *corev1.Container) []corev1.ResourceName {
	set := map[corev1.ResourceName]bool{}
	for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name, q := range l {
			if strings.HasPrefix(string(name), contract.NVIDIAPrefix) && !q.IsZero() {
				set[name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// deviceQuantity is what a container gets of a resource: its limit, else its
// request (extended resources need both equal when both are set).
func deviceQuantity(c *corev1.Container, name corev1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Limits[name]; ok {
		return q
	}
	return c.Resources.Requests[name]
}

func isGPUResource(name corev1.ResourceName) bool {
	_, mig := migProfile(string(name))
	return name == contract.ResourceGPU || mig
}

// podDevices returns how many devices of each GPU resource the pod holds at its
// peak: regular and sidecar (restartable init) containers run together; every
// other init container runs alone with the sidecars started before it.
func podDevices(pod *corev1.Pod) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	names := map[corev1.ResourceName]bool{}
	for _, wc := range workloadContainers(pod) {
		for _, n := range gpuResourceNames(wc.c) {
			if isGPUResource(n) {
				names[n] = true
			}
		}
	}
	for name := range names {
		var sidecars, peak int64
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			q := deviceQuantity(c, name)
			n := q.Value()
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecars += n
				peak = max(peak, sidecars)
				continue
			}
			peak = max(peak, sidecars+n)
		}
		app := sidecars
		for i := range pod.Spec.Containers {
			q := deviceQuantity(&pod.Spec.Containers[i], name)
			app += q.Value()
		}
		out[name] = max(peak, app)
	}
	return out
}

func totalDevices(d map[corev1.ResourceName]int64) int64 {
	var t int64
	for _, n := range d {
		t += n
	}
	return t
}

func describeDevices(d map[corev1.ResourceName]int64) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, fmt.Sprintf("%s: %d", name, d[name]))
	}
	return strings.Join(parts, ", ")
}

// checkGPUResources refuses unknown nvidia.com/ resources and fractional
// quantities of device resources.
func checkGPUResources(in *Input) (string, string, bool) {
	for _, wc := range workloadContainers(in.Pod) {
		for _, name := range gpuResourceNames(wc.c) {
			field := fmt.Sprintf("%s.resources.limits[%s]", wc.path, name)
			if !isGPUResource(name) {
				return ReasonUnsupportedGPUResource, fmt.Sprintf(
					"%s is not a GPU resource gpuvc hands out (limit: %s, %s<profile>, or the %s/%s annotations); request one of those instead",
					field, contract.ResourceGPU, contract.ResourceMIGPrefix, contract.AnnotationKAIFraction, contract.AnnotationKAIMemory), true
			}
			q := deviceQuantity(wc.c, name)
			if q.MilliValue()%1000 != 0 || q.Sign() < 0 {
				return ReasonNonIntegerGPU, fmt.Sprintf(
					"%s=%s is not a whole number of devices (limit: whole devices only); for part of a GPU drop the resource and set the annotation %s: \"0.5\"",
					field, q.String(), contract.AnnotationKAIFraction), true
			}
		}
	}
	return "", "", false
}

// checkMIGProfiles refuses MIG profiles the team may not use and profiles of
// other GPU models that map to none of the allowed ones.
func checkMIGProfiles(in *Input) (string, string, bool) {
	p := in.Policy
	for _, wc := range workloadContainers(in.Pod) {
		for _, name := range gpuResourceNames(wc.c) {
			profile, ok := migProfile(string(name))
			if !ok || p.migAllowed(profile) {
				continue
			}
			field := fmt.Sprintf("%s.resources.limits[%s]", wc.path, name)
			if _, err := mapMIG(in, profile); err != nil {
				return ReasonMIGProfileNotAllowed, fmt.Sprintf("%s asks for MIG profile %s: %v", field, profile, err), true
			}
		}
	}
	return "", "", false
}

// mapMIG maps a profile the team may not use as named onto an allowed one, or
// says why it cannot.
func mapMIG(in *Input, profile string) (string, error) {
	p := in.Policy
	allowed := "none"
	if len(p.AllowedMIGProfiles) > 0 {
		allowed = strings.Join(p.AllowedMIGProfiles, ", ")
	}
	if len(p.AllowedMIGProfiles) == 0 {
		return "", fmt.Errorf("team %s may not use MIG profiles (allowed: none); request whole GPUs or ask the platform team to allow a profile", p.Team)
	}
	if in.MIG == nil || p.PoolGPUProduct == "" {
		return "", fmt.Errorf("it is not allowed for team %s (allowed: %s); request one of those", p.Team, allowed)
	}
	if offered, err := in.MIG.Offers(p.PoolGPUProduct, profile); err == nil && offered {
		return "", fmt.Errorf("it is not allowed for team %s (allowed: %s); request one of those, or ask the platform team to allow %s", p.Team, allowed, profile)
	}
	mapped, err := in.MIG.Map(p.PoolGPUProduct, profile, p.AllowedMIGProfiles)
	if err != nil {
		return "", fmt.Errorf("pool %s (%s) has no allowed profile at least as large (allowed: %s): %v; request one of the allowed profiles", p.Pool, p.PoolGPUProduct, allowed, err)
	}
	return mapped, nil
}

// checkGPUCount refuses pods holding more GPU devices than MaxGPUsPerPod.
func checkGPUCount(in *Input) (string, string, bool) {
	d := podDevices(in.Pod)
	total := totalDevices(d)
	max := in.Policy.MaxGPUsPerPod
	if total <= max {
		return "", "", false
	}
	if max == 0 {
		return ReasonGPUCountAboveLimit, fmt.Sprintf(
			"the pod requests %d GPU device(s) (%s) but team %s may not request GPUs (limit: MaxGPUsPerPod=0); remove the GPU resources or ask the platform team for a GPU allowance",
			total, describeDevices(d), in.Policy.Team), true
	}
	return ReasonGPUCountAboveLimit, fmt.Sprintf(
		"the pod requests %d GPU device(s) (%s in spec.containers[*].resources) but team %s allows at most %d per pod (limit: MaxGPUsPerPod=%d); request at most %d or split the work across pods",
		total, describeDevices(d), in.Policy.Team, max, max, max), true
}

// checkControlPlaneGPU keeps GPUs away from the team's vCluster control plane.
func checkControlPlaneGPU(in *Input) (string, string, bool) {
	for _, wc := range workloadContainers(in.Pod) {
		if names := gpuResourceNames(wc.c); len(names) > 0 {
			return ReasonControlPlaneGPU, fmt.Sprintf(
				"%s.resources requests %s, but pods of the vCluster control plane (StatefulSet %s) may not use GPUs (limit: none); remove the GPU resources from the control plane's values",
				wc.path, names[0], in.Policy.VClusterName), true
		}
	}
	if hasShareAnnotations(in.Pod) {
		return ReasonControlPlaneGPU, fmt.Sprintf(
			"metadata.annotations asks for a GPU share, but pods of the vCluster control plane (StatefulSet %s) may not use GPUs (limit: none); remove the %s/%s annotations",
			in.Policy.VClusterName, contract.AnnotationKAIFraction, contract.AnnotationKAIMemory), true
	}
	return "", "", false
}

// renameResource moves a container's quantity of from onto to (adding to what
// to already has) in limits and requests.
func renameResource(c *corev1.Container, from, to corev1.ResourceName) {
	for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		q, ok := l[from]
		if !ok {
			continue
		}
		delete(l, from)
		if cur, ok := l[to]; ok {
			q.Add(cur)
		}
		l[to] = q
	}
}

// mutateWholeGPUAsMIG maps nvidia.com/gpu requests to the team's MIG profile.
func mutateWholeGPUAsMIG(in *Input) []Note {
	profile := in.Policy.WholeGPUAs
	if profile == "" || isReservation(in) {
		return nil
	}
	to := corev1.ResourceName(migResource(profile))
	var notes []Note
	for _, wc := range workloadContainers(in.Pod) {
		if !slices.Contains(gpuResourceNames(wc.c), contract.ResourceGPU) {
			continue
		}
		q := deviceQuantity(wc.c, contract.ResourceGPU)
		renameResource(wc.c, contract.ResourceGPU, to)
		notes = append(notes, Note{Normal, ReasonWholeGPUMapped, fmt.Sprintf(
			"%s: %s=%s became %s=%s: team %s gets MIG %s instances for whole-GPU requests",
			wc.path, contract.ResourceGPU, q.String(), to, q.String(), in.Policy.Team, profile)})
	}
	return notes
}

// mutateMIGProfiles rewrites profiles of other GPU models to the allowed profile
// they map to.
func mutateMIGProfiles(in *Input) []Note {
	var notes []Note
	for _, wc := range workloadContainers(in.Pod) {
		for _, name := range gpuResourceNames(wc.c) {
			profile, ok := migProfile(string(name))
			if !ok || in.Policy.migAllowed(profile) {
				continue
			}
			mapped, err := mapMIG(in, profile)
			if err != nil {
				continue // checkMIGProfiles refused it already
			}
			renameResource(wc.c, name, corev1.ResourceName(migResource(mapped)))
			notes = append(notes, Note{Normal, ReasonMIGProfileMapped, fmt.Sprintf(
				"%s: MIG profile %s is not offered by pool %s (%s); mapped to %s, the smallest allowed profile with at least as much compute and memory",
				wc.path, profile, in.Policy.Pool, in.Policy.PoolGPUProduct, mapped)})
		}
	}
	return notes
}

// isReservation is true for gpuvc's own reservation pods: they hold one whole GPU
// for fractional sharing, whatever the team maps whole-GPU requests to.
func isReservation(in *Input) bool {
	return in.Trusted && in.Pod.Labels[contract.LabelRole] == contract.RoleReservation
}
