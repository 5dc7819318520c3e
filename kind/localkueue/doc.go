// Package localkueue runs Kueue's controller manager as a local process against a
// local control plane (kind/localcluster), the way a developer's cluster and the
// tests need it: Kueue's CRDs and webhook configurations come from its module's
// config/components folder, rewritten to call the webhooks on 127.0.0.1 with a
// throw-away certificate, and Kueue gets a configuration for exactly that
// (certificates provided, no leader election, plain-Pod integration, fair sharing).
//
// In a real cluster Kueue runs as its own Deployment behind a Service; nothing
// here applies there.
package localkueue
