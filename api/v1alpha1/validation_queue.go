package v1alpha1

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateQueueing checks spec.queueing with the CRD's rules (team_types.go,
// team_queue_types.go markers).
func validateQueueing(p *field.Path, s TeamSpec) field.ErrorList {
	q := s.Queueing
	if q == nil {
		return nil
	}
	var errs field.ErrorList
	if w := q.Weight; w != nil && (*w < 0 || *w > MaxQueueWeight) {
		errs = append(errs, field.Invalid(p.Child("weight"), *w, fmt.Sprintf("must be between 0 and %d", MaxQueueWeight)))
	}
	if b := q.BorrowingLimit; b != nil {
		bp := p.Child("borrowingLimit")
		errs = append(errs, validateGPUAmount(bp, *b)...)
		errs = append(errs, migListedInQuota(bp, b.MIG, s.Quota.MIG, "a MIG profile can be borrowed only if spec.quota.mig lists it (a guarantee of 0 is fine); add the profile there")...)
	}
	if m := q.MaxQueued; m != nil {
		mp := p.Child("maxQueued")
		errs = append(errs, validateGPUAmount(mp, *m)...)
		errs = append(errs, migListedInQuota(mp, m.MIG, s.Quota.MIG, "a MIG profile can queue only if spec.quota.mig lists it (a guarantee of 0 is fine); add the profile there or remove it here")...)
	}
	pc := p.Child("priorityClasses")
	if len(q.PriorityClasses) > MaxAllowedListItems {
		errs = append(errs, field.TooMany(pc, len(q.PriorityClasses), MaxAllowedListItems))
	}
	for i, name := range q.PriorityClasses {
		if len(name) > 253 || !dns1123Subdomain.MatchString(name) {
			errs = append(errs, field.Invalid(pc.Index(i), name, "a WorkloadPriorityClass name: lowercase letters, digits, - and ., at most 253 characters"))
		}
		if slices.Contains(q.PriorityClasses[:i], name) {
			errs = append(errs, field.Duplicate(pc.Index(i), name))
		}
	}
	if l := q.LendingLimit; l != nil {
		lp := p.Child("lendingLimit")
		errs = append(errs, validateGPUAmount(lp, *l)...)
		if l.GPUs != nil && *l.GPUs > s.GuaranteedGPUs() {
			errs = append(errs, field.Invalid(lp.Child("gpus"), *l.GPUs, fmt.Sprintf("cannot exceed the guarantee spec.quota.gpus (%d); lower the lending limit or raise the guarantee", s.GuaranteedGPUs())))
		}
		for _, name := range slices.Sorted(maps.Keys(l.MIG)) {
			guaranteed, ok := s.Quota.MIG[name]
			if !ok || l.MIG[name] > guaranteed {
				errs = append(errs, field.Invalid(lp.Child("mig").Key(name), l.MIG[name], fmt.Sprintf("each profile must be listed in spec.quota.mig and lend at most its guarantee there (%d)", guaranteed)))
			}
		}
	}
	return errs
}

func validateGPUAmount(p *field.Path, a GPUAmount) field.ErrorList {
	var errs field.ErrorList
	if a.GPUs != nil && (*a.GPUs < 0 || *a.GPUs > MaxQuotaGPUs) {
		errs = append(errs, field.Invalid(p.Child("gpus"), *a.GPUs, fmt.Sprintf("must be between 0 and %d", MaxQuotaGPUs)))
	}
	if len(a.MIG) > MaxMIGProfilesPerQuota {
		errs = append(errs, field.TooMany(p.Child("mig"), len(a.MIG), MaxMIGProfilesPerQuota))
	}
	for _, name := range slices.Sorted(maps.Keys(a.MIG)) {
		if n := a.MIG[name]; n < 0 || n > MaxQuotaGPUs {
			errs = append(errs, field.Invalid(p.Child("mig").Key(name), n, fmt.Sprintf("each MIG count must be between 0 and %d", MaxQuotaGPUs)))
		}
	}
	return errs
}

// migListedInQuota refuses, with why, each MIG profile of a queue limit that
// spec.quota.mig does not list: Kueue has no flavor for it.
func migListedInQuota[V any](p *field.Path, mig map[string]V, quota map[string]int32, why string) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(mig)) {
		if _, ok := quota[name]; !ok {
			errs = append(errs, field.Invalid(p.Child("mig").Key(name), name, why))
		}
	}
	return errs
}
