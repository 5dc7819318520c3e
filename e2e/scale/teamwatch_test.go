package scale

import (
	"context"
	"strings"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// hostObjects is the pseudo-condition "the host steps reached RBAC, the last
// one before the vCluster release": the first RoleBinding seen in the team's
// namespace (the object itself, not the Team's Provisioning message about it).
const hostObjects = "HostObjects"

// teamWatch records when each Team's conditions were first seen True, and
// when its host objects appeared.
type teamWatch struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time // team → condition → first seen True
	stop func()
}

func watchTeams(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface) (*teamWatch, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	w, err := c.Watch(ctx, &gpuvcv1.TeamList{})
	if err != nil {
		return nil, err
	}
	rb, err := cs.RbacV1().RoleBindings("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		w.Stop()
		return nil, err
	}
	tw := &teamWatch{seen: map[string]map[string]time.Time{}, stop: func() { w.Stop(); rb.Stop() }}
	go func() {
		for ev := range rb.ResultChan() {
			o, ok := ev.Object.(*rbacv1.RoleBinding)
			if !ok || ev.Type != watch.Added {
				continue
			}
			if team, ok := strings.CutPrefix(o.Namespace, gpuvcv1.HostNamespace("")); ok {
				tw.mark(team, hostObjects, time.Now())
			}
		}
	}()
	go func() {
		for ev := range w.ResultChan() {
			t, ok := ev.Object.(*gpuvcv1.Team)
			if !ok {
				continue
			}
			now := time.Now()
			for _, cond := range []string{gpuvcv1.ConditionVClusterReady, gpuvcv1.ConditionReady} {
				if apimeta.IsStatusConditionTrue(t.Status.Conditions, cond) {
					tw.mark(t.Name, cond, now)
				}
			}
		}
	}()
	return tw, nil
}

// mark records the first time team's cond was seen.
func (tw *teamWatch) mark(team, cond string, at time.Time) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.seen[team] == nil {
		tw.seen[team] = map[string]time.Time{}
	}
	if _, done := tw.seen[team][cond]; !done {
		tw.seen[team][cond] = at
	}
}

// at returns when team's condition was first seen True.
func (tw *teamWatch) at(team, cond string) (time.Time, bool) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	t, ok := tw.seen[team][cond]
	return t, ok
}

// all reports whether every team has cond, and the latest time it was seen.
func (tw *teamWatch) all(teams []string, cond string) (time.Time, bool) {
	var last time.Time
	for _, name := range teams {
		t, ok := tw.at(name, cond)
		if !ok {
			return time.Time{}, false
		}
		if t.After(last) {
			last = t
		}
	}
	return last, true
}
