package v1alpha1

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxAllowedListItems bounds spec.placement.allowedTolerations and
// spec.queueing.priorityClasses.
const MaxAllowedListItems = 16

var (
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	taintKey         = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
)

// validatePlacement checks spec.placement with the CRD's rules
// (team_placement_types.go markers).
func validatePlacement(p *field.Path, pl *Placement) field.ErrorList {
	if pl == nil {
		return nil
	}
	var errs field.ErrorList
	tp := p.Child("allowedTolerations")
	if len(pl.AllowedTolerations) > MaxAllowedListItems {
		errs = append(errs, field.TooMany(tp, len(pl.AllowedTolerations), MaxAllowedListItems))
	}
	for i, t := range pl.AllowedTolerations {
		ip := tp.Index(i)
		switch {
		case t.Key == "":
			errs = append(errs, field.Required(ip.Child("key"), "a wildcard toleration is never allowed; name the taint's key"))
		case len(t.Key) > 316 || !taintKey.MatchString(t.Key):
			errs = append(errs, field.Invalid(ip.Child("key"), t.Key, "a taint key: an optional DNS prefix and /, then letters, digits, -, _ and ."))
		case strings.HasPrefix(t.Key, "gpuvc.dev/"):
			errs = append(errs, field.Invalid(ip.Child("key"), t.Key, "is a gpuvc taint (pools, failing GPUs, unsafe runtimes), which tenants may not tolerate; remove the entry"))
		}
		if t.Operator != "" && t.Operator != "Equal" && t.Operator != "Exists" {
			errs = append(errs, field.NotSupported(ip.Child("operator"), t.Operator, []string{"Equal", "Exists"}))
		}
		if t.Operator == "Exists" && t.Value != "" {
			errs = append(errs, field.Invalid(ip.Child("value"), t.Value, "operator Exists takes no value; remove the value or use Equal"))
		}
		if len(t.Value) > 63 {
			errs = append(errs, field.TooLong(ip.Child("value"), t.Value, 63))
		}
		switch t.Effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			errs = append(errs, field.NotSupported(ip.Child("effect"), t.Effect, []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}))
		}
	}
	return errs
}
