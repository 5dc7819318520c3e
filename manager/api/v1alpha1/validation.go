package v1alpha1

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gpuvc/gpuvc/gpu/mig"
)

// Validate checks what the CRD schema cannot say: MIG profile names must exist on
// some GPU model gpuvc knows. The schema has checked shapes and ranges already.
func (t *Team) Validate() field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	profiles := make([]string, 0, len(t.Spec.Quota.MIG))
	for p := range t.Spec.Quota.MIG {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	for _, p := range profiles {
		if err := knownProfile(p); err != nil {
			errs = append(errs, field.Invalid(spec.Child("quota", "mig").Key(p), p, err.Error()))
		}
	}
	if s := t.Spec.GPUSharing; s != nil && s.WholeGPUAs != "" {
		if err := knownProfile(s.WholeGPUAs); err != nil {
			errs = append(errs, field.Invalid(spec.Child("gpuSharing", "wholeGPUAs"), s.WholeGPUAs, err.Error()))
		}
	}
	return errs
}

// knownProfile reports an error unless some catalog model offers the profile.
func knownProfile(name string) error {
	if _, err := mig.ParseProfileName(name); err != nil {
		return err
	}
	var offered []string
	for _, m := range mig.Models() {
		if _, err := m.Profile(name); err == nil {
			return nil
		}
		for _, p := range m.Profiles {
			offered = append(offered, p.Name)
		}
	}
	sort.Strings(offered)
	return fmt.Errorf("no known GPU model offers MIG profile %s; known profiles: %s", name, strings.Join(dedupe(offered), ", "))
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// UnlimitedGPUsPerPod stands for "no per-pod GPU bound" where a number is needed.
const UnlimitedGPUsPerPod = 1 << 20

// EffectiveMaxGPUsPerPod is the per-pod GPU bound every fence applies:
// spec.maxGPUsPerPod, else everything the GPU and MIG quota allows, else no bound.
func (t *Team) EffectiveMaxGPUsPerPod() int64 {
	if t.Spec.MaxGPUsPerPod != nil {
		return int64(*t.Spec.MaxGPUsPerPod)
	}
	q := t.Spec.Quota
	if q.GPUs == nil && len(q.MIG) == 0 {
		return UnlimitedGPUsPerPod
	}
	var n int64
	if q.GPUs != nil {
		n += int64(*q.GPUs)
	}
	for _, c := range q.MIG {
		n += int64(c)
	}
	return n
}
