package scale

import (
	"context"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/manager/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
)

// teamWatch records when each Team's conditions were first seen True.
type teamWatch struct {
	mu   sync.Mutex
	seen map[string]map[string]time.Time // team → condition → first seen True
	stop func()
}

func watchTeams(ctx context.Context, cfg *rest.Config) (*teamWatch, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	w, err := c.Watch(ctx, &gpuvcv1.TeamList{})
	if err != nil {
		return nil, err
	}
	tw := &teamWatch{seen: map[string]map[string]time.Time{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			t, ok := ev.Object.(*gpuvcv1.Team)
			if !ok {
				continue
			}
			now := time.Now()
			tw.mu.Lock()
			for _, cond := range []string{gpuvcv1.ConditionHostResourcesReady, gpuvcv1.ConditionVClusterReady} {
				if !apimeta.IsStatusConditionTrue(t.Status.Conditions, cond) {
					continue
				}
				if tw.seen[t.Name] == nil {
					tw.seen[t.Name] = map[string]time.Time{}
				}
				if _, done := tw.seen[t.Name][cond]; !done {
					tw.seen[t.Name][cond] = now
				}
			}
			tw.mu.Unlock()
		}
	}()
	return tw, nil
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
