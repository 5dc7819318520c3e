// Package teamclaims is gpuvc's sync of a spec.dra team's Dynamic Resource
// Allocation objects between its virtual cluster and its host namespace, the
// part vCluster OSS v0.36.1 leaves out (docs/dra.md, "Through a team's own
// cluster"): vCluster's pod translator already rewrites a pod's
// spec.resourceClaims names to host names once sync.toHost.resourceClaims and
// resourceClaimTemplates are enabled, but only vCluster Pro copies the claims
// and templates themselves.
//
// Per spec.dra team the manager's leader connects to a ready control-plane pod
// with the team's kubeconfig (manager/teamevents.TeamConfig) and keeps:
//   - a host copy of every virtual ResourceClaimTemplate and ResourceClaim, in
//     the team's host namespace, under exactly the name the pod translator
//     writes (HostName), labelled and annotated as vCluster labels its own
//     copies plus contract.LabelDRACopy; deleted when the virtual object goes,
//     replaced when it was recreated, and host copies without a virtual object
//     (a restart, a missed delete) removed;
//   - each virtual claim's status as the host copy's: the allocation, the
//     devices' status and status.reservedFor with host pods named as the
//     team's own pods;
//   - the host DeviceClasses the team may use (TeamSpec.AllowedDeviceClasses),
//     and only those, as DeviceClasses of the team's cluster.
//
// The host copies are judged like anything else written in a team namespace:
// the webhook dra.validate.gpuvc.dev and the CEL policies
// gpuvc-resourceclaim-fence / gpuvc-resourceclaimtemplate-fence match every
// identity in team namespaces, the manager's included. A copy the host refuses
// becomes a Warning event on the virtual object with the host's message, once
// per object and message.
package teamclaims
