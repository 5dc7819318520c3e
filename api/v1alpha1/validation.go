package v1alpha1

import (
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of a Team spec. The CRD schema (team_types.go markers) states the same
// numbers; TestGoAndCRDValidationAgree holds the two together.
const (
	MaxNameLength          = 40
	MaxQuotaGPUs           = 4096
	MaxGPUsPerPodLimit     = 64
	MaxQuotaPods           = 100000
	MinPodsPerSharedGPU    = 2
	MaxPodsPerSharedGPU    = 48
	MaxMIGProfilesPerQuota = 32
	MaxEgressCIDRs         = 64
	// MaxQuotaClaims bounds spec.quota.storageClasses[*].claims.
	MaxQuotaClaims = 100000
	// MaxStorageClassNameLength keeps a class's quota resource names
	// (<class>.storageclass.storage.k8s.io/requests.storage) within the 253
	// characters of their DNS-subdomain prefix.
	MaxStorageClassNameLength = 253 - len(".storageclass.storage.k8s.io")
)

var (
	dns1035     = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	poolPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	migPattern  = regexp.MustCompile(`^[1-7]g[.][0-9]+gb([+]me)?$`)
	semver      = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	// storageClassPattern is a DNS-1123 subdomain: a StorageClass's name.
	storageClassPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// Validate checks a Team with the rules of the CRD schema and its CEL rules, so a
// client can refuse bad input before any request, plus what the schema cannot say:
// MIG profile names must exist on some GPU model gpuvc knows. Each error names the
// field, the value, the limit and the fix.
func (t *Team) Validate() field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateName(t.Name)...)
	spec := field.NewPath("spec")
	s := t.Spec
	switch {
	case s.Pool == "":
		errs = append(errs, field.Required(spec.Child("pool"), "the node pool the team's GPU pods run on, e.g. a100"))
	case len(s.Pool) > 63 || !poolPattern.MatchString(s.Pool):
		errs = append(errs, field.Invalid(spec.Child("pool"), s.Pool, "a pool is a label value of at most 63 lowercase letters, digits and -, e.g. a100"))
	}
	errs = append(errs, validateQuota(spec.Child("quota"), s.Quota)...)
	errs = append(errs, validatePlacement(spec.Child("placement"), s.Placement)...)
	if m := s.MaxGPUsPerPod; m != nil {
		p := spec.Child("maxGPUsPerPod")
		switch {
		case *m < 1 || *m > MaxGPUsPerPodLimit:
			errs = append(errs, field.Invalid(p, *m, fmt.Sprintf("must be between 1 and %d", MaxGPUsPerPodLimit)))
		case s.Quota.GPUs != nil && *m > *s.Quota.GPUs:
			errs = append(errs, field.Invalid(p, *m, fmt.Sprintf("cannot exceed spec.quota.gpus (%d); lower maxGPUsPerPod or raise the quota", *s.Quota.GPUs)))
		}
	}
	errs = append(errs, validateSharing(spec.Child("gpuSharing"), s)...)
	errs = append(errs, validateQueueing(spec.Child("queueing"), s)...)
	errs = append(errs, validateDRA(spec.Child("dra"), s)...)
	switch s.PodSecurity {
	case "", "privileged", "baseline", "restricted":
	default:
		errs = append(errs, field.NotSupported(spec.Child("podSecurity"), s.PodSecurity, []string{"privileged", "baseline", "restricted"}))
	}
	errs = append(errs, validateMembers(spec.Child("members"), s.Members)...)
	if n := s.Network; n != nil {
		p := spec.Child("network", "allowedEgressCIDRs")
		if len(n.AllowedEgressCIDRs) > MaxEgressCIDRs {
			errs = append(errs, field.TooMany(p, len(n.AllowedEgressCIDRs), MaxEgressCIDRs))
		}
		for i, c := range n.AllowedEgressCIDRs {
			if _, err := netip.ParsePrefix(c); err != nil {
				errs = append(errs, field.Invalid(p.Index(i), c, "must be a CIDR such as 10.0.0.0/8 (IPv4 prefix at most /32, IPv6 at most /128)"))
			}
		}
	}
	errs = append(errs, validateIdle(spec.Child("idle"), s.Idle)...)
	if v := s.VCluster; v != nil && v.ChartVersion != "" && !semver.MatchString(v.ChartVersion) {
		errs = append(errs, field.Invalid(spec.Child("vcluster", "chartVersion"), v.ChartVersion, "must be a chart version such as 0.30.0 or v0.30.0; leave it empty for the manager's default"))
	}
	return errs
}

// validateName: the CRD's rule for the name checks new Teams only (optionalOldSelf;
// names are immutable), so a Team stored before the rule existed can still be
// updated and its finalizer released.
func validateName(name string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "a team name, e.g. fraud-ml")}
	case len(name) > MaxNameLength:
		return field.ErrorList{field.Invalid(p, name, fmt.Sprintf("has %d characters; a team name has at most %d (it names the host namespace team-<name> and the vCluster's objects): choose a shorter name", len(name), MaxNameLength))}
	case !dns1035.MatchString(name):
		return field.ErrorList{field.Invalid(p, name, "not a DNS-1035 label: use lowercase letters, digits and -, starting with a letter and ending with a letter or digit (e.g. fraud-ml); it names the host namespace team-<name> and the vCluster release")}
	}
	return nil
}

func validateQuota(p *field.Path, q Quota) field.ErrorList {
	// The counts are checked as a queue's limits are; a quota's MIG keys must
	// also be known profiles.
	errs := validateGPUAmount(p, GPUAmount{GPUs: q.GPUs, MIG: q.MIG})
	for _, name := range slices.Sorted(maps.Keys(q.MIG)) {
		kp := p.Child("mig").Key(name)
		if !migPattern.MatchString(name) {
			errs = append(errs, field.Invalid(kp, name, "keys are MIG profiles such as 1g.10gb, 3g.40gb or 1g.10gb+me"))
		} else if err := knownProfile(name); err != nil {
			errs = append(errs, field.Invalid(kp, name, err.Error()))
		}
	}
	for _, r := range []struct {
		name, example string
		q             *resource.Quantity
	}{{"cpu", "64", q.CPU}, {"memory", "256Gi", q.Memory}, {"storage", "1Ti", q.Storage}} {
		if r.q != nil && r.q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Child(r.name), r.q.String(), "is negative; a quota is 0 or more, e.g. "+r.example))
		}
	}
	if q.Pods != nil && (*q.Pods < 1 || *q.Pods > MaxQuotaPods) {
		errs = append(errs, field.Invalid(p.Child("pods"), *q.Pods, fmt.Sprintf("must be between 1 and %d", MaxQuotaPods)))
	}
	return append(errs, validateStorageClasses(p, q)...)
}

// validateStorageClasses checks the per-class storage limits: each key a
// StorageClass name, each entry limiting something, no class allowed more
// than all classes together.
func validateStorageClasses(p *field.Path, q Quota) field.ErrorList {
	var errs field.ErrorList
	for _, class := range slices.Sorted(maps.Keys(q.StorageClasses)) {
		cp := p.Child("storageClasses").Key(class)
		c := q.StorageClasses[class]
		if len(class) > MaxStorageClassNameLength || !storageClassPattern.MatchString(class) {
			errs = append(errs, field.Invalid(cp, class, fmt.Sprintf("keys are StorageClass names: lowercase letters, digits, '-' and '.', at most %d characters (e.g. fast-ssd)", MaxStorageClassNameLength)))
		}
		if c.Storage == nil && c.Claims == nil {
			errs = append(errs, field.Required(cp, "set storage (e.g. 500Gi), claims (e.g. 10) or both; remove the entry to leave the class limited by spec.quota.storage only"))
		}
		if s := c.Storage; s != nil {
			switch {
			case s.Sign() < 0:
				errs = append(errs, field.Invalid(cp.Child("storage"), s.String(), "is negative; a quota is 0 or more, e.g. 500Gi"))
			case q.Storage != nil && s.Cmp(*q.Storage) > 0:
				errs = append(errs, field.Invalid(cp.Child("storage"), s.String(), fmt.Sprintf("exceeds spec.quota.storage (%s), which caps all classes together: lower it to at most %s or raise spec.quota.storage", q.Storage, q.Storage)))
			}
		}
		if n := c.Claims; n != nil && (*n < 0 || *n > MaxQuotaClaims) {
			errs = append(errs, field.Invalid(cp.Child("claims"), *n, fmt.Sprintf("must be between 0 and %d (0 forbids the class)", MaxQuotaClaims)))
		}
	}
	return errs
}

func validateSharing(p *field.Path, s TeamSpec) field.ErrorList {
	g := s.GPUSharing
	if g == nil {
		return nil
	}
	var errs field.ErrorList
	if n := g.MaxPodsPerSharedGPU; n != 0 && (n < MinPodsPerSharedGPU || n > MaxPodsPerSharedGPU) {
		errs = append(errs, field.Invalid(p.Child("maxPodsPerSharedGPU"), n, fmt.Sprintf("must be between %d and %d", MinPodsPerSharedGPU, MaxPodsPerSharedGPU)))
	}
	if w := g.WholeGPUAs; w != "" {
		wp := p.Child("wholeGPUAs")
		switch _, inQuota := s.Quota.MIG[w]; {
		case !migPattern.MatchString(w):
			errs = append(errs, field.Invalid(wp, w, "must be a MIG profile such as 3g.40gb"))
		case knownProfile(w) != nil:
			errs = append(errs, field.Invalid(wp, w, knownProfile(w).Error()))
		case !inQuota:
			errs = append(errs, field.Invalid(wp, w, "the MIG profile whole-GPU requests map to needs a quota in spec.quota.mig"))
		}
	}
	if l := g.FractionLimits; l != nil {
		if l.Enabled && !g.Fractions {
			errs = append(errs, field.Invalid(p.Child("fractionLimits"), true, "limits apply to fractional pods; set spec.gpuSharing.fractions: true"))
		}
		if r := l.ReserveMiB; r != nil && (*r < 0 || *r > MaxFractionReserveMiB) {
			errs = append(errs, field.Invalid(p.Child("fractionLimits", "reserveMiB"), *r, fmt.Sprintf("must be between 0 and %d MiB", MaxFractionReserveMiB)))
		}
	}
	if g.Fractions && (s.Quota.GPUs == nil || *s.Quota.GPUs < 1) {
		errs = append(errs, field.Invalid(p.Child("fractions"), true, "fractional GPUs are carved from whole GPUs the team holds; set spec.quota.gpus to at least 1"))
	}
	return errs
}

func validateMembers(p *field.Path, members []Member) field.ErrorList {
	var errs field.ErrorList
	seen := map[Member]bool{}
	for i, m := range members {
		mp := p.Index(i)
		if m.Kind != "User" && m.Kind != "Group" {
			errs = append(errs, field.NotSupported(mp.Child("kind"), m.Kind, []string{"User", "Group"}))
		}
		// Characters, not bytes, as the CRD's maxLength counts them; text that is
		// not UTF-8 would reach the API server altered (JSON replaces bad bytes).
		switch n := utf8.RuneCountInString(m.Name); {
		case !utf8.ValidString(m.Name):
			errs = append(errs, field.Invalid(mp.Child("name"), m.Name, "is not valid UTF-8 text: write the user or group name as the authenticator reports it"))
		case n == 0 || n > 253:
			errs = append(errs, field.Invalid(mp.Child("name"), m.Name, fmt.Sprintf("has %d characters; a user or group name has 1 to 253", n)))
		}
		if seen[m] {
			errs = append(errs, field.Duplicate(mp, m.Kind+":"+m.Name))
		}
		seen[m] = true
	}
	return errs
}

// UnlimitedGPUsPerPod stands for "no per-pod GPU bound" where a number is needed.
const UnlimitedGPUsPerPod = 1 << 20

// EffectiveMaxGPUsPerPod is the per-pod GPU bound every fence applies:
// spec.maxGPUsPerPod, else everything the GPU and MIG quota allows (with
// spec.queueing, guarantee plus borrowing limit), else no bound.
func (t *Team) EffectiveMaxGPUsPerPod() int64 {
	if t.Spec.MaxGPUsPerPod != nil {
		return int64(*t.Spec.MaxGPUsPerPod)
	}
	q := t.Spec.CeilingQuota()
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
