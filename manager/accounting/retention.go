package accounting

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// sweep marks the records of Teams not listed (live: the UIDs listed) as
// deleted and removes those deleted DeletedRetention ago. It reads the records'
// metadata only.
func (a *Accountant) sweep(ctx context.Context, live map[types.UID]bool, now time.Time) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := a.reader.List(ctx, list, client.InNamespace(a.opts.Namespace), client.MatchingLabels{LabelLedger: "true"}); err != nil {
		return fmt.Errorf("listing GPU accounting ledgers in %s: %w", a.opts.Namespace, err)
	}
	var errs []error
	recorded := map[types.UID]bool{}
	for i := range list.Items {
		m := &list.Items[i]
		if !IsLedger(m, a.opts.Namespace) {
			continue
		}
		uid := types.UID(m.Labels[LabelTeamUID])
		recorded[uid] = true
		if live[uid] {
			continue
		}
		at, err := deletedAt(m)
		switch {
		case err != nil || at.IsZero():
			err = a.markDeleted(ctx, m, now)
		case !now.Before(at.Add(a.opts.DeletedRetention)):
			err = client.IgnoreNotFound(a.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: m.Namespace, Name: m.Name}}, client.Preconditions{UID: &m.UID}))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("ledger of deleted team %s (uid %s): %w", m.Labels[contract.LabelTeam], uid, err))
		}
	}
	for uid := range a.gone {
		if !recorded[uid] {
			delete(a.gone, uid) // never written: nothing to mark
		}
	}
	return errors.Join(errs...)
}

// markDeleted closes a gone team's ledger at now: from the ledger in memory, the
// interval since its last sample is credited with what that sample saw, as for
// any pod that stops; from a record alone (the Team went while no manager ran)
// nothing is guessed (Resume with nothing held now).
func (a *Accountant) markDeleted(ctx context.Context, m *metav1.PartialObjectMetadata, now time.Time) error {
	uid := types.UID(m.Labels[LabelTeamUID])
	l := a.gone[uid]
	if l != nil {
		l.Advance(now, Rates{})
	} else {
		saved, err := loadLedger(ctx, a.reader, a.opts.Namespace, m.Name)
		var corrupt *decodeError
		if errors.As(err, &corrupt) {
			// Nothing to close; marked all the same, so that retention removes it.
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationDeletedAt, now.UTC().Format(time.RFC3339))
			return a.client.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}},
				client.RawPatch(types.MergePatchType, []byte(patch)))
		}
		if err != nil || saved == nil {
			return err
		}
		l = saved
		l.Resume(now, Rates{})
	}
	l.Prune(now, a.opts.Retention)
	rec := &Record{Team: m.Labels[contract.LabelTeam], UID: uid, DeletedAt: now, Ledger: l}
	if err := saveRecord(ctx, a.client, a.opts.Namespace, rec); err != nil {
		return err
	}
	delete(a.gone, uid)
	return nil
}
