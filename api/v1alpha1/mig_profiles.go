package v1alpha1

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// knownMIGProfiles is every MIG profile some GPU model in gpu/mig's catalog
// offers: the values spec.quota.mig (and the queueing limits) accept. The API
// owns the list so that it imports nothing from gpu/ (api/ is the bottom of the
// house); TestKnownMIGProfilesMatchTheCatalog keeps it equal to the catalog and
// validation_agree_test keeps the CRD's CEL rule equal to it.
var knownMIGProfiles = []string{
	"1g.10gb", "1g.10gb+me", "1g.12gb", "1g.12gb+me", "1g.18gb", "1g.18gb+me", "1g.20gb", "1g.24gb", "1g.35gb",
	"1g.5gb", "1g.5gb+me", "1g.6gb", "1g.6gb+me",
	"2g.10gb", "2g.12gb", "2g.12gb+me", "2g.20gb", "2g.24gb", "2g.35gb",
	"3g.20gb", "3g.40gb", "3g.47gb", "3g.48gb", "3g.71gb",
	"4g.20gb", "4g.24gb", "4g.40gb", "4g.47gb", "4g.48gb", "4g.71gb",
	"7g.40gb", "7g.80gb", "7g.94gb", "7g.96gb", "7g.141gb",
}

// migProfileFormat is a MIG profile name: <slices>g.<memory>gb with an optional +me.
var migProfileFormat = regexp.MustCompile(`^[1-9][0-9]*g\.[1-9][0-9]*gb(\+me)?$`)

// KnownMIGProfiles lists, sorted, every MIG profile some GPU model gpuvc knows offers.
func KnownMIGProfiles() []string { return slices.Sorted(slices.Values(knownMIGProfiles)) }

// knownProfile reports an error unless some catalog model offers the profile.
func knownProfile(name string) error {
	if slices.Contains(knownMIGProfiles, name) {
		return nil
	}
	if !migProfileFormat.MatchString(name) {
		return fmt.Errorf("invalid MIG profile name %q: want <slices>g.<memory>gb[+me], e.g. 1g.10gb", name)
	}
	return fmt.Errorf("no known GPU model offers MIG profile %s; known profiles: %s", name, strings.Join(KnownMIGProfiles(), ", "))
}
