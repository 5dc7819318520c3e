// Package bench is the harness of the syncer's benchmarks, and the checks they
// share with tests: a team namespace on a real API server to create share pods
// in (Team) with the invariants of its GPU shares, a watch for pods leaving the
// share gate, percentiles, and the measurements themselves (Admission,
// WebhookOverhead and Throughput with a WebhookSwitch, UngateLatency, Burst).
//
// The same measurements run against different setups: syncer/integration and
// syncer/share run them against the webhook and the share controller alone, and
// this package's own benchmarks run them against gpuvc's manager (manager.New:
// Team reconciler, webhook, share controller and CEL fence in one process), as
// it runs in a cluster. Test support: only tests import it.
package bench
