package team

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// printable is a Team as `-o yaml|json` prints it: a manifest `gpuvc team apply -f`
// takes back, so with apiVersion and kind (the client drops them on decode) and
// without managedFields, which only the API server reads.
func printable(t *gpuvcv1.Team) *gpuvcv1.Team {
	t = t.DeepCopy()
	t.TypeMeta = metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"}
	t.ManagedFields = nil
	return t
}

// printableList is a TeamList whose items are printable.
func printableList(l *gpuvcv1.TeamList) *gpuvcv1.TeamList {
	out := &gpuvcv1.TeamList{
		TypeMeta: metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "TeamList"},
		ListMeta: l.ListMeta,
		Items:    make([]gpuvcv1.Team, 0, len(l.Items)),
	}
	for i := range l.Items {
		out.Items = append(out.Items, *printable(&l.Items[i]))
	}
	return out
}

// asApplied keeps what a person decides in a manifest and drops what the API server
// owns, so the saved output of `team get -o yaml` (or kubectl's) applies again even
// after the team was recreated: no uid or resourceVersion preconditions, no status.
func asApplied(t *gpuvcv1.Team) {
	t.TypeMeta = metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"}
	m := &t.ObjectMeta
	m.UID, m.ResourceVersion, m.Generation, m.ManagedFields = "", "", 0, nil
	m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds = metav1.Time{}, nil, nil
	m.Finalizers = nil
	t.Status = gpuvcv1.TeamStatus{}
}
