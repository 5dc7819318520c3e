package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateRefusesProfilesNoGPUOffers(t *testing.T) {
	cases := map[string]struct {
		team    Team
		wantErr []string // substrings, in order of the errors
	}{
		"known profiles": {
			team: Team{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: TeamSpec{Pool: "a100", Quota: Quota{MIG: map[string]int32{"1g.10gb": 2, "3g.40gb": 1}},
				GPUSharing: &GPUSharing{WholeGPUAs: "3g.40gb"}}},
		},
		"profile of no model": {
			team:    Team{Spec: TeamSpec{Quota: Quota{MIG: map[string]int32{"1g.7gb": 1, "2g.20gb": 1}}}},
			wantErr: []string{"spec.quota.mig[1g.7gb]", "no known GPU model offers MIG profile 1g.7gb", "1g.10gb"},
		},
		"wholeGPUAs of no model": {
			team:    Team{Spec: TeamSpec{Quota: Quota{MIG: map[string]int32{"3g.41gb": 1}}, GPUSharing: &GPUSharing{WholeGPUAs: "3g.41gb"}}},
			wantErr: []string{"spec.quota.mig[3g.41gb]", "spec.gpuSharing.wholeGPUAs"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := tc.team.Validate()
			if len(tc.wantErr) == 0 {
				require.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			msg := errs.ToAggregate().Error()
			for _, w := range tc.wantErr {
				require.Contains(t, msg, w)
			}
		})
	}
}
