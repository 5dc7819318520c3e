// Package idle is the idle policy of a Team (spec.idle): it puts an unused vCluster
// to sleep and wakes it on the next connection to the team's API address.
//
// A vCluster is idle when no team pod runs on the host and nobody opened a
// connection to its API server. Pods are seen on the host; connections cannot be
// (the API server's metrics do not tell the team's requests from vCluster's own),
// so before sleeping the manager routes the team's Service through its waker for a
// probe window ("drowsy"): the waker proxies each connection to the running
// control plane and counts it. A connection from anything but the team's own
// system pods (vCluster's CoreDNS) is activity and routes the Service back. When
// the window passes quietly, the control plane is scaled to zero ("asleep") and
// the Service stays on the waker. The next connection scales it back: the waker
// completes its TLS handshake with a short-lived certificate from the vCluster CA
// the team's kubeconfig trusts (client-go gives a handshake 10 s, a cold start
// takes longer), holds the request until a control-plane pod is ready, answers 503
// Retry-After (which client-go retries, whatever the verb) and routes the Service
// back; connections that meet the waker once the control plane runs are proxied
// as raw TCP (TLS passes through untouched). docs/idle.md has the whole story.
//
// Routing keeps Helm's Service: the manager removes its selector (saved in an
// annotation) and adds an EndpointSlice of its own pointing at the waker's port
// on the leader's pod. Every state is read back from those objects, so a new
// leader picks up where the old one stopped.
package idle
