// Package teamstatus is the one way a Team's status is written. Each writer
// (an Owner: the Team reconciler, the idle policy, GPU accounting) owns some of
// the status fields and condition types, and writes them, and only them, with
// server-side apply on the status subresource under its own field manager. A
// write never carries another writer's fields (conditions are a map keyed by
// type), so no writer undoes another's, even from a stale read, and none
// conflicts with another: no optimistic lock, no retry.
//
// A writer that stops applying one of its fields removes it, unless another
// manager co-owns it: Teams written before this package have their status owned
// by Update operations (merge patches). A Writer that sees such entries first
// lets every owner claim its own live fields, then removes those entries
// (Writer.Write).
package teamstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Owner is one writer of Team status: its field manager and what it owns.
type Owner struct {
	manager    string
	conditions []string // condition types
	fields     []string // status fields other than conditions, by JSON name
}

// The writers of Team status. Every status field and condition type has exactly
// one owner (a test holds it).
var (
	// Reconciler is the Team reconciler (manager/team): what it provisioned and
	// the conditions that summarise it.
	Reconciler = Owner{manager: "gpuvc-team",
		conditions: []string{gpuvcv1.ConditionReady, gpuvcv1.ConditionHostResourcesReady, gpuvcv1.ConditionVClusterReady, gpuvcv1.ConditionKubeconfigReady,
			gpuvcv1.ConditionNetworkPoliciesHonored},
		fields: []string{"observedGeneration", "namespace", "kubeconfigSecret", "gpuUsage", "queue"}}
	// Idle is the idle policy (manager/idle): vCluster sleep.
	Idle = Owner{manager: "gpuvc-idle", conditions: []string{gpuvcv1.ConditionAsleep}, fields: []string{"idle"}}
	// Accounting is GPU accounting (manager/accounting).
	Accounting = Owner{manager: "gpuvc-accounting", fields: []string{"gpuSeconds"}}
)

// Owners are every writer of Team status.
func Owners() []Owner { return []Owner{Reconciler, Idle, Accounting} }

// Manager is the field manager of o's writes.
func (o Owner) Manager() string { return o.manager }

// owns reports whether o owns the condition type.
func (o Owner) owns(conditionType string) bool { return slices.Contains(o.conditions, conditionType) }

// Apply writes o's part of want's status if it differs from o's part of read's
// (the Team as the writer read it); it reports whether it wrote. One write per
// read: a writer that writes again from the same read keeps a Writer.
func (o Owner) Apply(ctx context.Context, c client.Client, read, want *gpuvcv1.Team) (bool, error) {
	return o.Writer(c, read).Write(ctx, want)
}

// Writer writes one owner's part of one Team's status, only when it changed
// since the writer read or last wrote it: an unchanged status is not written, so
// nothing (the Team reconciler included) is woken by it.
type Writer struct {
	owner  Owner
	client client.Client
	last   part
	// read is the Team as read, for the upgrade of Update-owned status; nil once
	// the upgrade was tried.
	read *gpuvcv1.Team
}

// Writer returns a Writer of o's part of the Team read (from a cache or the API
// server: either is safe, o writes only its own fields). A Team read from a
// cache that strips managedFields is not upgraded here: UpgradeAll does that.
func (o Owner) Writer(c client.Client, read *gpuvcv1.Team) *Writer {
	return &Writer{owner: o, client: c, last: o.part(&read.Status), read: read.DeepCopy()}
}

// Write applies the owner's part of t's status if it changed; it reports
// whether it wrote.
//
// Before its first write, it upgrades a status written by Update operations
// (updateEntries): each owner applies the live values of its own fields, then
// the Update entries are removed from metadata.managedFields, guarded by the
// resourceVersion the claims ended at. A write meanwhile (a conflict) leaves the
// upgrade to the next write that sees the entries; until then a field the owner
// stops applying stays.
func (w *Writer) Write(ctx context.Context, t *gpuvcv1.Team) (bool, error) {
	p := w.owner.part(&t.Status)
	if p.equal(w.last) {
		return false, nil
	}
	if w.read != nil && len(updateEntries(w.read.ManagedFields)) > 0 {
		if err := upgrade(ctx, w.client, w.read); err != nil {
			if !errors.Is(err, errRaced) {
				return false, err
			}
			log.FromContext(ctx).V(1).Info("Team status written meanwhile; its Update-owned fields are upgraded at the next write", "team", t.Name, "err", err)
		}
	}
	w.read = nil
	if _, err := apply(ctx, w.client, w.owner, t.Name, p, ""); err != nil {
		return false, err
	}
	w.last = p
	return true, nil
}

// part is an owner's fields of a status, as JSON values (no zero value of an
// omitempty field, times to the second as the API server keeps them).
type part map[string]any

func (o Owner) part(s *gpuvcv1.TeamStatus) part {
	all, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		// TeamStatus has only JSON-safe fields: a type change that breaks this is a bug.
		panic(fmt.Sprintf("teamstatus: converting a Team status: %v", err))
	}
	p := part{}
	for _, f := range o.fields {
		if v, ok := all[f]; ok {
			p[f] = v
		}
	}
	conds, _ := all["conditions"].([]any)
	var mine []any
	for _, c := range conds {
		if typ, _ := c.(map[string]any)["type"].(string); o.owns(typ) {
			mine = append(mine, c)
		}
	}
	if len(mine) > 0 {
		p["conditions"] = mine
	}
	return p
}

// equal compares two parts, conditions by type whatever their order.
func (p part) equal(q part) bool {
	byType := func(p part) part {
		out := part{}
		for k, v := range p {
			out[k] = v
		}
		if conds, ok := p["conditions"].([]any); ok {
			m := map[string]any{}
			for _, c := range conds {
				m[c.(map[string]any)["type"].(string)] = c
			}
			out["conditions"] = m
		}
		return out
	}
	return equality.Semantic.DeepEqual(byType(p), byType(q))
}

// apply writes p as o's whole part of the Team's status; with resourceVersion,
// only if the Team is still at it. It returns the Team as the API server
// answered (its resourceVersion and managedFields after the write).
func apply(ctx context.Context, c client.Client, o Owner, team string, p part, resourceVersion string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any(p)}}
	u.SetGroupVersionKind(gpuvcv1.GroupVersion.WithKind("Team"))
	u.SetName(team)
	if resourceVersion != "" {
		u.SetResourceVersion(resourceVersion)
	}
	err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(o.manager), client.ForceOwnership)
	return u, err
}

// updateEntries are the managedFields entries of status writes by Update
// operations (merge patches, updates): a field they co-own is never removed by
// the owner's apply.
func updateEntries(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if isUpdateEntry(e) {
			out = append(out, e)
		}
	}
	return out
}

func isUpdateEntry(e metav1.ManagedFieldsEntry) bool {
	return e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "status"
}

// upgrade hands the status fields of read, a Team whose status Update
// operations co-own, to their owners: each owner claims the live values of its
// fields (from read, guarded by its resourceVersion, so no claim writes over a
// newer write), then the Update entries are removed.
func upgrade(ctx context.Context, c client.Client, read *gpuvcv1.Team) error {
	rv, managed := read.ResourceVersion, read.ManagedFields
	for _, o := range Owners() {
		p := o.part(&read.Status)
		if len(p) == 0 {
			continue
		}
		u, err := apply(ctx, c, o, read.Name, p, rv)
		if apierrors.IsConflict(err) {
			err = errors.Join(errRaced, err)
		}
		if err != nil {
			return fmt.Errorf("claiming %s's status fields: %w", o.manager, err)
		}
		rv, managed = u.GetResourceVersion(), u.GetManagedFields()
	}
	kept := make([]metav1.ManagedFieldsEntry, 0, len(managed))
	for _, e := range managed {
		if !isUpdateEntry(e) {
			kept = append(kept, e)
		}
	}
	// On the Team itself: the status subresource keeps managedFields as the API
	// server computes them, whatever the request says.
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
		{"op": "replace", "path": "/metadata/managedFields", "value": kept},
	})
	if err != nil {
		return err
	}
	t := &gpuvcv1.Team{}
	t.Name = read.Name
	err = c.Patch(ctx, t, client.RawPatch(types.JSONPatchType, patch))
	if apierrors.IsConflict(err) || apierrors.IsInvalid(err) { // a failed test answers 422
		err = errors.Join(errRaced, err)
	}
	if err != nil {
		return fmt.Errorf("removing the Update entries of the status from managedFields: %w", err)
	}
	return nil
}

// errRaced: the Team was written between the read and the upgrade (a claim's
// resourceVersion conflicts, or the patch's test of it fails).
var errRaced = errors.New("the Team was written since it was read")
