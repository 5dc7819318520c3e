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
