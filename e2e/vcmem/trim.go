package vcmem

// A variant is a set of vCluster values given to a Team's spec.vcluster.values,
// merged over gpuvc's own (and the install's vcluster.values).
type variant struct {
	Name   string
	Values map[string]any
}

// trimmedFlags are flags of vCluster's k8s distro (controlPlane.distro.k8s,
// passed after vCluster's own and merged by flag name) that drop what a team's
// single control plane does not need:
//   - kube-apiserver --watch-cache=false: no per-resource cache of every object;
//     watches and lists are served by kine (the embedded SQLite datastore) instead.
//     With one syncer and a few controllers as clients the cache saves little work.
//   - --enable-priority-and-fairness=false: no flow-control queues and their
//     watchers; a team's own API server has few clients to be fair between.
//   - --profiling=false on both: no pprof handlers.
//   - kube-controller-manager --leader-elect=false: one replica, nothing to elect
//     (and no lease renewed every 2 s).
var trimmedFlags = map[string]any{
	"apiServer": map[string]any{"extraArgs": []any{
		"--watch-cache=false", "--enable-priority-and-fairness=false", "--profiling=false",
	}},
	"controllerManager": map[string]any{"extraArgs": []any{
		"--leader-elect=false", "--profiling=false",
	}},
}

// withGOGC adds GOGC to the control plane container's environment (inherited by
// the API server and the controller manager vCluster starts): the Go heap is
// collected at +50% instead of +100% of the live heap, trading CPU for memory.
func withGOGC(k8s map[string]any, gogc string) map[string]any {
	out := map[string]any{"env": []any{map[string]any{"name": "GOGC", "value": gogc}}}
	for k, v := range k8s {
		out[k] = v
	}
	return out
}

func distroK8s(k8s map[string]any) map[string]any {
	return map[string]any{"controlPlane": map[string]any{"distro": map[string]any{"k8s": k8s}}}
}

// variants are measured side by side in one run: gpuvc's values as installed,
// then the trims.
var variants = []variant{
	{Name: "default"},
	{Name: "flags", Values: distroK8s(trimmedFlags)},
	{Name: "gogc", Values: distroK8s(withGOGC(trimmedFlags, "50"))},
	{Name: "gogc25", Values: distroK8s(withGOGC(trimmedFlags, "25"))},
}
