// Package queued tells a team why its GPU pod waits in Kueue. Kueue reports it on
// the pod's Workload (condition QuotaReserved=False), which the team cannot see
// from its virtual cluster; this controller repeats it as a Warning event on the
// host pod, which vCluster syncs to the team's own pod, with the team's standing:
// "queued: team vision uses 4 of 4 guaranteed GPUs and borrows 2 (limit 2); Kueue:
// couldn't assign flavors ... insufficient unused quota ...". One event per new
// reason; none once the pod is admitted. A pod gpuvc sent to Kueue for which
// Kueue makes no Workload at all (NotQueued, notqueued.go) is told so after a
// grace period, and counted in gpuvc_team_not_queued_pods.
package queued
