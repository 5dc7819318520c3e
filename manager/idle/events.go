package idle

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// AddEventHandlers makes the Sleeper look at every team as soon as something it
// reports on changes, instead of at the next Interval: a Team asks for sleep or
// wake, a Team's Asleep condition says Waking while no wake of this manager
// runs (written by a writer holding an older copy, or by a leader that is gone),
// a vCluster control plane's replicas or ready replicas change (a wake finished
// elsewhere, a Helm upgrade reset the replicas). The informers are the
// manager's cache: the Team reconciler watches the same kinds.
func (s *Sleeper) AddEventHandlers(ctx context.Context, informers cache.Informers) error {
	for _, w := range []struct {
		obj client.Object
		h   toolscache.ResourceEventHandler
	}{
		{&gpuvcv1.Team{}, s.PokeOnRequest()},
		{&appsv1.StatefulSet{}, s.pokeOnControlPlane()},
		{&appsv1.Deployment{}, s.pokeOnControlPlane()},
	} {
		inf, err := informers.GetInformer(ctx, w.obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(w.h); err != nil {
			return err
		}
	}
	return nil
}

// PokeOnRequest is an informer event handler of Teams: a Team that carries a
// sleep or wake request, or whose Waking condition no wake of this manager is
// behind, pokes the Sleeper.
func (s *Sleeper) PokeOnRequest() toolscache.ResourceEventHandler {
	check := func(obj any) {
		t, ok := obj.(*gpuvcv1.Team)
		if !ok {
			return
		}
		if t.Annotations[contract.AnnotationIdleRequest] != "" || s.staleWaking(t) {
			s.Poke()
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, obj any) { check(obj) }}
}

// staleWaking: t's Asleep condition says Waking, and no wake of this manager
// runs (its own wakes are registered before they write Waking).
func (s *Sleeper) staleWaking(t *gpuvcv1.Team) bool {
	c := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionAsleep)
	return c != nil && c.Reason == gpuvcv1.ReasonWaking && !s.waking(t.Name)
}

// pokeOnControlPlane is an informer event handler of StatefulSets and
// Deployments: a team's control plane (named after its release, the team, in
// its namespace) that changed replicas or ready replicas pokes the Sleeper.
func (s *Sleeper) pokeOnControlPlane() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(old, obj any) {
		before, after := controlPlaneScale(old), controlPlaneScale(obj)
		if after.team && before != after {
			s.Poke()
		}
	}}
}

// scaleState is what of a control plane the Sleeper's decisions depend on.
type scaleState struct {
	team            bool // a team's vCluster control plane
	replicas, ready int32
}

func controlPlaneScale(obj any) scaleState {
	var st scaleState
	var ns, name string
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		ns, name = o.Namespace, o.Name
		st.replicas, st.ready = ptr.Deref(o.Spec.Replicas, 1), o.Status.ReadyReplicas
	case *appsv1.Deployment:
		ns, name = o.Namespace, o.Name
		st.replicas, st.ready = ptr.Deref(o.Spec.Replicas, 1), o.Status.ReadyReplicas
	default:
		return st
	}
	team, ok := strings.CutPrefix(ns, gpuvcv1.HostNamespace(""))
	st.team = ok && team != "" && name == team
	return st
}
