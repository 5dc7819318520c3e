package accounting

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// The record of a team's ledger: ConfigMap LedgerName(team, uid) in gpuvc's own
// namespace (Options.Namespace), where no tenant identity holds any right, labelled
// LabelLedger=true, gpuvc.dev/team and LabelTeamUID, with the ledger as JSON under
// DataKey. One per Team object: a team deleted and created again under its name has
// two. Once the Team is gone the record carries AnnotationDeletedAt and is kept for
// Options.DeletedRetention.
const (
	LabelLedger  = "gpuvc.dev/accounting-ledger"
	LabelTeamUID = "gpuvc.dev/team-uid"
	// AnnotationDeletedAt is when the accountant first saw the Team gone (RFC 3339).
	AnnotationDeletedAt = "gpuvc.dev/team-deleted-at"
	DataKey             = "ledger.json"
	// LegacyConfigMap is where gpuvc before the ledger moved kept it: in the
	// team's own host namespace, writable by the team's vCluster and deleted with
	// it. The accountant moves those into its namespace when it starts.
	LegacyConfigMap = "gpuvc-accounting"
)

// LedgerName is the ConfigMap of one Team object's ledger.
func LedgerName(team string, uid types.UID) string { return "ledger-" + team + "-" + string(uid) }

// Record is one Team object's ledger as the store keeps it.
type Record struct {
	Team string
	UID  types.UID
	// DeletedAt is when the Team was seen gone; zero while it exists.
	DeletedAt time.Time
	Ledger    *Ledger
}

// IsLedger reports whether cm is a ledger record in namespace, the manager's: a
// ConfigMap elsewhere with the label is not one.
func IsLedger(cm metav1.Object, namespace string) bool {
	l := cm.GetLabels()
	return cm.GetNamespace() == namespace && l[LabelLedger] == "true" && l[contract.LabelTeam] != "" &&
		l[LabelTeamUID] != "" && cm.GetName() == LedgerName(l[contract.LabelTeam], types.UID(l[LabelTeamUID]))
}

// DecodeRecord reads a ledger record.
func DecodeRecord(cm *corev1.ConfigMap) (*Record, error) {
	l, err := DecodeLedger(cm)
	if err != nil {
		return nil, err
	}
	r := &Record{Team: cm.Labels[contract.LabelTeam], UID: types.UID(cm.Labels[LabelTeamUID]), Ledger: l}
	if r.DeletedAt, err = deletedAt(cm); err != nil {
		return nil, err
	}
	return r, nil
}

func deletedAt(cm metav1.Object) (time.Time, error) {
	s, ok := cm.GetAnnotations()[AnnotationDeletedAt]
	if !ok {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, &decodeError{fmt.Errorf("GPU accounting ledger %s/%s: annotation %s=%q is not an RFC 3339 time: %w",
			cm.GetNamespace(), cm.GetName(), AnnotationDeletedAt, s, err)}
	}
	return t, nil
}

// loadLedger reads a ledger; nil when there is none.
func loadLedger(ctx context.Context, r client.Reader, namespace, name string) (*Ledger, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return DecodeLedger(cm)
}

// DecodeLedger reads the ledger a record (or a legacy checkpoint) holds.
func DecodeLedger(cm *corev1.ConfigMap) (*Ledger, error) {
	l := &Ledger{}
	if err := json.Unmarshal([]byte(cm.Data[DataKey]), l); err != nil {
		return nil, &decodeError{fmt.Errorf("reading GPU accounting ledger %s/%s: %w", cm.Namespace, cm.Name, err)}
	}
	return l, nil
}

// decodeError is a record that cannot be read.
type decodeError struct{ error }

func (e *decodeError) Unwrap() error { return e.error }

// saveRecord writes a record, creating it the first time.
func saveRecord(ctx context.Context, c client.Client, namespace string, r *Record) error {
	b, err := json.Marshal(r.Ledger)
	if err != nil {
		return err
	}
	labels := map[string]string{LabelLedger: "true", contract.LabelTeam: r.Team, LabelTeamUID: string(r.UID)}
	meta := map[string]any{"labels": labels}
	if !r.DeletedAt.IsZero() {
		meta["annotations"] = map[string]string{AnnotationDeletedAt: r.DeletedAt.UTC().Format(time.RFC3339)}
	}
	// A merge patch of what the accountant owns: no read, no resourceVersion to race on.
	patch, err := json.Marshal(map[string]any{"metadata": meta, "data": map[string]string{DataKey: string(b)}})
	if err != nil {
		return err
	}
	name := LedgerName(r.Team, r.UID)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	err = c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
	if !apierrors.IsNotFound(err) {
		return err
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Data: map[string]string{DataKey: string(b)}}
	if !r.DeletedAt.IsZero() {
		cm.Annotations = map[string]string{AnnotationDeletedAt: r.DeletedAt.UTC().Format(time.RFC3339)}
	}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing GPU accounting ledger %s/%s: %w", namespace, name, err)
	}
	return nil // or created meanwhile: the next sample patches it
}

// statusOf summarises a ledger for the Team's status.
func statusOf(l *Ledger) *gpuvcv1.GPUSeconds {
	s := &gpuvcv1.GPUSeconds{Since: metav1.NewTime(l.Since), SampledAt: metav1.NewTime(l.SampledAt),
		Total: int64(math.Floor(l.Totals.Total()))}
	for k, v := range l.Totals {
		s.ByKind = append(s.ByKind, gpuvcv1.KindSeconds{Pool: k.Pool, Kind: k.Kind, Seconds: int64(math.Floor(v))})
	}
	slices.SortFunc(s.ByKind, func(a, b gpuvcv1.KindSeconds) int {
		return cmp.Or(cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Kind, b.Kind))
	})
	return s
}

// sameCounts reports whether two summaries count the same since the same second
// (the API keeps times to the second).
func sameCounts(a, b *gpuvcv1.GPUSeconds) bool {
	return a.Since.Unix() == b.Since.Unix() && a.Total == b.Total && slices.Equal(a.ByKind, b.ByKind)
}
