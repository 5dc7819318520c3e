package v1alpha1

import "k8s.io/apimachinery/pkg/util/validation/field"

// validateDRA checks spec.dra with the CRD's rules (team_dra_types.go and the
// TeamSpec markers).
func validateDRA(p *field.Path, s TeamSpec) field.ErrorList {
	d := s.DRA
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Queueing != nil {
		errs = append(errs, field.Invalid(p, "set", "cannot be combined with spec.queueing: Kueue v0.17.0 counts no DRA devices (its DRA integration starts at v0.18), so the team's claims would bypass its queue; remove spec.dra or spec.queueing"))
	}
	cp := p.Child("deviceClasses")
	if len(d.DeviceClasses) > MaxDeviceClasses {
		errs = append(errs, field.TooMany(cp, len(d.DeviceClasses), MaxDeviceClasses))
	}
	seen := map[string]bool{}
	for i, c := range d.DeviceClasses {
		switch {
		case len(c) > MaxDeviceClassNameLength:
			errs = append(errs, field.TooLong(cp.Index(i), c, MaxDeviceClassNameLength))
		case !dns1123Subdomain.MatchString(c):
			errs = append(errs, field.Invalid(cp.Index(i), c, "a DeviceClass name: lowercase letters, digits, '-' and '.' (e.g. gpu.nvidia.com)"))
		case seen[c]:
			errs = append(errs, field.Duplicate(cp.Index(i), c))
		}
		seen[c] = true
	}
	return errs
}
