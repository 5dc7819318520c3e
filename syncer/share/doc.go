// Package share is the syncer's share controller: it serves the fractional GPU
// pods the webhook gated (gpu-fraction / gpu-memory).
//
// Per team namespace it holds whole GPUs with reservation pods (nvidia.com/gpu:
// 1, in the team's own namespace so the team's ResourceQuota counts them and a
// GPU is never shared across teams), bin-packs the gated pods onto them with
// gpu/share's best-fit allocator, gives each pod its GPU through the env
// ConfigMap the webhook referenced, pins it to the reservation's node and removes
// the scheduling gate. Empty reservations are deleted after a short grace.
//
// All state lives in labels and annotations of host pods (see
// syncer/share_contract.go), read fresh from the API server on every reconcile:
// the controller is level-based and a restart loses nothing. See docs/share.md.
package share
