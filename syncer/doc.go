// Package syncer maps what a team's virtual pods ask for onto the host cluster and
// fences it: a mutating and a validating admission webhook on pods in team
// namespaces (namespaces labelled gpuvc.dev/team).
//
// vCluster copies a tenant's pod into the team's host namespace as written, so the
// host side decides: it pins the pod to the team's node pool, translates GPU
// requests (whole GPU, MIG profile, KAI-style fraction), strips settings a tenant
// must not choose, and refuses what cannot be honoured with a message that names
// the field, the value and the limit.
//
// Every decision is a small function with no I/O: a Check returns
// (reason, message, denied) and a Mutation rewrites the pod and returns Notes.
// The mutating webhook runs checks then mutations; the validating webhook runs
// the same checks on the final pod and requires it to be a fixed point of the
// mutations, so the fence holds even if another mutating webhook ran after us.
// docs/syncer.md describes the chain, each reason and the contract with the
// share controller.
package syncer
