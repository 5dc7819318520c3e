package manager

import (
	"fmt"
	"regexp"
)

// poolName is what a Team's spec.pool may be (api/v1alpha1, TeamSpec.Pool).
var poolName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// checkUsageHistoryPools refuses a --usage-history-pool value no Team could
// name as its pool: a typo would otherwise leave the pool silently without
// usage history.
func checkUsageHistoryPools(pools []string) error {
	for _, p := range pools {
		if len(p) > 63 || !poolName.MatchString(p) {
			return fmt.Errorf("--usage-history-pool %q: not a pool name (limit: what a Team's spec.pool may be, 1–63 lowercase letters, digits and -, starting and ending with a letter or digit); give the pool as Teams name it, e.g. --usage-history-pool=a100", p)
		}
	}
	return nil
}
