// Package accounting integrates the GPUs each team holds over time into
// GPU-seconds per team, pool and kind: the Prometheus counter
// gpuvc_team_gpu_seconds_total, the Team's status.gpuSeconds, and hourly buckets
// that `gpuvc team usage --since` reads.
//
// Weights (weight.go): a whole GPU is 1, a MIG slice its compute slices over the
// GPU model's (1g on an A100 = 1/7), a fractional pod its share of the reservation
// it is bound to. Reservation GPUs are split into the shares bound to pods
// (kind "fraction") and the rest (kind "reserved"), so the kinds of a team add up
// to what it holds, without double counting.
//
// The state of a team is a Ledger (ledger.go), kept in memory and checkpointed
// after every sample into a ConfigMap of gpuvc's own namespace, where no tenant
// identity may write (store.go); a restarted manager continues from it
// (accountant.go). A deleted team's ledger is kept for a retention
// (retention.go); ledgers an older gpuvc kept in team namespaces are moved when
// the manager starts (migrate.go).
package accounting
