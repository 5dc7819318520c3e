// Package integration runs the syncer webhook against a real kube-apiserver,
// scheduler and controller manager (e2e/localcp) with kwok GPU nodes: pods are
// created through the API server, mutated or refused by the webhook, and
// scheduled onto the simulated GPU nodes. Tests skip under -short.
package integration
