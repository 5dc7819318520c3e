package accounting

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// The checkpoint of a team's ledger: ConfigMap LedgerConfigMap in the team's host
// namespace, labelled LabelLedger=true and gpuvc.dev/team, with the ledger as JSON
// under DataKey. It is deleted with the namespace, that is with the Team.
const (
	LedgerConfigMap = "gpuvc-accounting"
	LabelLedger     = "gpuvc.dev/accounting-ledger"
	DataKey         = "ledger.json"
)

// loadLedger reads a team's checkpoint; nil when there is none.
func loadLedger(ctx context.Context, r client.Reader, namespace string) (*Ledger, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: LedgerConfigMap}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return DecodeLedger(cm)
}

// DecodeLedger reads the ledger a checkpoint ConfigMap holds.
func DecodeLedger(cm *corev1.ConfigMap) (*Ledger, error) {
	l := &Ledger{}
	if err := json.Unmarshal([]byte(cm.Data[DataKey]), l); err != nil {
		return nil, &decodeError{fmt.Errorf("reading GPU accounting ledger %s/%s: %w", cm.Namespace, cm.Name, err)}
	}
	return l, nil
}

// decodeError is a checkpoint that cannot be read.
type decodeError struct{ error }

func (e *decodeError) Unwrap() error { return e.error }

// saveLedger writes a team's checkpoint, creating it the first time. A namespace
// that does not exist yet (or any more) is not an error: there is nothing to keep.
func saveLedger(ctx context.Context, c client.Client, team, namespace string, l *Ledger) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: LedgerConfigMap,
			Labels: map[string]string{LabelLedger: "true", contract.LabelTeam: team}},
		Data: map[string]string{DataKey: string(b)},
	}
	// A merge patch of the data alone: no read, no resourceVersion to race on.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": cm.Labels}, "data": cm.Data})
	if err != nil {
		return err
	}
	err = c.Patch(ctx, cm.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		err = c.Create(ctx, cm)
	}
	if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) ||
		apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil // namespace missing or going; or created meanwhile: the next sample patches it
	}
	return err
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
