package teamstatus

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// upgradeTries bounds the re-reads of one Team that keeps being written
// between UpgradeAll's read and its claims.
const upgradeTries = 5

// UpgradeAll upgrades every Team whose status Update operations co-own (written
// by a gpuvc before api/teamstatus), reading them from live, a reader of the API
// server: a cache that strips managedFields (the manager's does) hides the
// entries from Writer, so the manager runs this once when it starts. It
// reports how many Teams it upgraded.
func UpgradeAll(ctx context.Context, live client.Reader, c client.Client) (int, error) {
	var list gpuvcv1.TeamList
	if err := live.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing Teams to upgrade their status owners: %w", err)
	}
	upgraded := 0
	for i := range list.Items {
		t := &list.Items[i]
		for try := 1; len(updateEntries(t.ManagedFields)) > 0; try++ {
			err := upgrade(ctx, c, t)
			if err == nil {
				upgraded++
				break
			}
			if !errors.Is(err, errRaced) || try == upgradeTries {
				return upgraded, fmt.Errorf("Team %s: %w", t.Name, err)
			}
			t = &gpuvcv1.Team{}
			if err := live.Get(ctx, client.ObjectKey{Name: list.Items[i].Name}, t); err != nil {
				return upgraded, client.IgnoreNotFound(err)
			}
		}
	}
	return upgraded, nil
}
