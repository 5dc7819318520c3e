package v1alpha1

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateIdle checks spec.idle with the CRD's rules (team_idle_types.go).
func validateIdle(p *field.Path, idle *Idle) field.ErrorList {
	if idle == nil {
		return nil
	}
	var errs field.ErrorList
	if v := idle.VCluster; v != nil {
		errs = append(errs, validateIdleDuration(p.Child("vcluster", "sleepAfter"), v.SleepAfter.Duration, "30m")...)
	}
	if g := idle.GPUPods; g != nil {
		gp := p.Child("gpuPods")
		errs = append(errs, validateIdleDuration(gp.Child("after"), g.After.Duration, "1h")...)
		switch g.Action {
		case "", IdleActionNotify, IdleActionEvict:
		case IdleActionSleep:
			if idle.VCluster == nil {
				errs = append(errs, field.Invalid(gp.Child("action"), g.Action,
					"Sleep puts the team's vCluster to sleep and needs spec.idle.vcluster (its next connection wakes it); set spec.idle.vcluster.sleepAfter (e.g. 30m) or use action Evict"))
			}
		default:
			errs = append(errs, field.NotSupported(gp.Child("action"), g.Action, []string{IdleActionNotify, IdleActionEvict, IdleActionSleep}))
		}
		if n := g.MaxUtilizationPercent; n < 0 || n > 100 {
			errs = append(errs, field.Invalid(gp.Child("maxUtilizationPercent"), n, "must be between 0 and 100"))
		}
	}
	return errs
}

func validateIdleDuration(p *field.Path, d time.Duration, example string) field.ErrorList {
	if d < MinIdleDuration || d > MaxIdleDuration {
		return field.ErrorList{field.Invalid(p, d.String(), fmt.Sprintf("is out of range; use a duration between %v and %v, e.g. %s", MinIdleDuration, MaxIdleDuration, example))}
	}
	return nil
}
