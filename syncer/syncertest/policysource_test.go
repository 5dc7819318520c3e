package syncertest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/syncer"
)

func TestNamespacePolicies(t *testing.T) {
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	reader := fake.NewClientBuilder().WithObjects(
		ns("team-fraud", map[string]string{contract.LabelTeam: "fraud", contract.LabelPool: "a100"}),
		ns("plain", nil),
		ns("no-pool", map[string]string{contract.LabelTeam: "fraud"}),
		ns("stranger", map[string]string{contract.LabelTeam: "stranger", contract.LabelPool: "a100"}),
		ns("moved", map[string]string{contract.LabelTeam: "pinned", contract.LabelPool: "a100"}),
	).Build()
	s := &NamespacePolicies{Reader: reader, Teams: map[string]syncer.TeamPolicy{
		"fraud":  {MaxGPUsPerPod: 4},
		"pinned": {Pool: "h100"},
	}}
	got, err := s.TeamPolicy(context.Background(), "team-fraud")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&syncer.TeamPolicy{Team: "fraud", Namespace: "team-fraud", Pool: "a100", MaxGPUsPerPod: 4}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for name, want := range map[string]string{
		"plain":    syncer.ErrNotTeamNamespace.Error(),
		"missing":  syncer.ErrNotTeamNamespace.Error(),
		"no-pool":  "has no gpuvc.dev/pool label",
		"stranger": `no policy for team "stranger"`,
		"moved":    `says pool "a100" but team "pinned"'s policy says pool "h100"`,
	} {
		_, err := s.TeamPolicy(context.Background(), name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error mentioning %q", name, err, want)
		}
		if (want == syncer.ErrNotTeamNamespace.Error()) != errors.Is(err, syncer.ErrNotTeamNamespace) {
			t.Errorf("%s: errors.Is(ErrNotTeamNamespace) wrong for %v", name, err)
		}
	}
}
