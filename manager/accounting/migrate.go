package accounting

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// prepare runs once before the first sample: the ledger namespace exists (the
// chart's release namespace does; `gpuvc manager` run by hand may name a new one)
// and every ledger an older gpuvc kept in a team namespace is moved into it.
func (a *Accountant) prepare(ctx context.Context, now time.Time) error {
	if a.prepared {
		return nil
	}
	if err := a.ensureNamespace(ctx); err != nil {
		return err
	}
	if err := a.migrateLegacy(ctx, now); err != nil {
		return fmt.Errorf("moving GPU accounting ledgers from team namespaces to %s: %w", a.opts.Namespace, err)
	}
	a.prepared = true
	return nil
}

func (a *Accountant) ensureNamespace(ctx context.Context) error {
	err := a.reader.Get(ctx, types.NamespacedName{Name: a.opts.Namespace}, &corev1.Namespace{})
	if apierrors.IsNotFound(err) {
		err = a.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.opts.Namespace}})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("GPU accounting ledger namespace %s: %w", a.opts.Namespace, err)
	}
	return nil
}

// migrateLegacy moves every legacy ledger (LegacyConfigMap in team-<its team
// label>) into a record: the record is written first and the legacy ConfigMap
// deleted after, so a manager stopped in between finds the record next time and
// only deletes. A ledger whose Team is gone is kept as a deleted team's, deleted
// now.
func (a *Accountant) migrateLegacy(ctx context.Context, now time.Time) error {
	list := &corev1.ConfigMapList{}
	if err := a.reader.List(ctx, list, client.MatchingLabels{LabelLedger: "true"}); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		cm := &list.Items[i]
		team := cm.Labels[contract.LabelTeam]
		// Only gpuvc's checkpoint: a ConfigMap a vCluster syncs from inside has another name.
		if cm.Name != LegacyConfigMap || team == "" || cm.Namespace != gpuvcv1.HostNamespace(team) {
			continue
		}
		if err := a.migrateOne(ctx, cm, team, now); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", cm.Namespace, cm.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (a *Accountant) migrateOne(ctx context.Context, cm *corev1.ConfigMap, team string, now time.Time) error {
	logger := log.FromContext(ctx).WithValues("team", team, "from", cm.Namespace+"/"+cm.Name)
	l, err := DecodeLedger(cm)
	var corrupt *decodeError
	if errors.As(err, &corrupt) {
		// Nothing to recover; left where it is, it goes with the namespace.
		logger.Error(err, "legacy GPU accounting ledger unreadable; not moved")
		return nil
	}
	rec := &Record{Team: team, Ledger: l}
	t := &gpuvcv1.Team{}
	switch err := a.reader.Get(ctx, types.NamespacedName{Name: team}, t); {
	case err == nil:
		rec.UID = t.UID
	case apierrors.IsNotFound(err):
		rec.UID, rec.DeletedAt = cm.UID, now
	default:
		return err
	}
	name := LedgerName(team, rec.UID)
	existing, err := loadLedger(ctx, a.reader, a.opts.Namespace, name)
	if err != nil && !errors.As(err, &corrupt) {
		return err
	}
	// A record as recent (moved before, the legacy copy not yet deleted) stays.
	if existing == nil || existing.SampledAt.Before(l.SampledAt) {
		if err := saveRecord(ctx, a.client, a.opts.Namespace, rec); err != nil {
			return err
		}
	}
	if err := a.client.Delete(ctx, cm, client.Preconditions{UID: &cm.UID}); client.IgnoreNotFound(err) != nil {
		return err
	}
	logger.Info("GPU accounting ledger moved into gpuvc's namespace", "to", a.opts.Namespace+"/"+name,
		"gpuSeconds", l.Totals.Total())
	return nil
}
