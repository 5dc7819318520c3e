// Package teamevents tells a team, in its own virtual cluster, what gpuvc
// decided about it as a whole: its vCluster went to sleep or woke, a sleep was
// refused, its quota changed. Decisions about one pod reach the team already:
// vCluster copies the host's events of a pod it synced onto the virtual pod.
// Team-level decisions land on the host Team, which a team cannot read, so they
// are written again here, as core/v1 Events on the virtual Namespace `default`
// (`kubectl get events -n default` with the team's kubeconfig).
//
// The events are written with the team's kubeconfig (the Secret gpuvc exports)
// straight to a ready control-plane pod, never through the team's Service: a
// connection through the Service meets the waker while the vCluster is drowsy
// or asleep, counts as the team's activity and wakes it. With no ready
// control-plane pod (asleep, starting) an event is held, in order and bounded
// per team, and written at the next event or Flush once the control plane
// serves again, with the time it was decided. Held events live in the leader's
// memory: a leader change loses them (the host Team keeps its own events).
package teamevents
