package v1alpha1

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
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
			requireValidation(t, tc.team, tc.wantErr)
		})
	}
}

// Member names are counted in characters, as the CRD's maxLength counts them,
// and must be UTF-8 (JSON would alter other bytes on the way to the API server).
// Found by FuzzTeamValidation: a name Validate accepted was refused after the
// JSON round trip (testdata/fuzz/FuzzTeamValidation/92213472268f5430).
func TestValidateMemberNames(t *testing.T) {
	cases := map[string]struct {
		team    Team
		wantErr []string
	}{
		"member name not UTF-8": {
			team:    Team{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: TeamSpec{Pool: "a100", Members: []Member{{Kind: "User", Name: "ab\xffcd"}}}},
			wantErr: []string{"spec.members[0].name", "not valid UTF-8"},
		},
		"member name of 254 characters": {
			team:    Team{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: TeamSpec{Pool: "a100", Members: []Member{{Kind: "User", Name: strings.Repeat("é", 254)}}}},
			wantErr: []string{"spec.members[0].name", "has 254 characters"},
		},
		"member name of 253 two-byte characters": {
			team: Team{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: TeamSpec{Pool: "a100", Members: []Member{{Kind: "User", Name: strings.Repeat("é", 253)}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			requireValidation(t, tc.team, tc.wantErr)
		})
	}
}

// requireValidation checks what Validate says of team: nothing when want is
// empty, else errors that mention every substring of want.
func requireValidation(t *testing.T, team Team, want []string) {
	t.Helper()
	errs := team.Validate()
	if len(want) == 0 {
		require.Empty(t, errs)
		return
	}
	require.NotEmpty(t, errs)
	msg := errs.ToAggregate().Error()
	for _, w := range want {
		require.Contains(t, msg, w)
	}
}

func TestValidateStorageClasses(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	n := func(v int32) *int32 { return &v }
	team := func(quota Quota) Team {
		return Team{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: TeamSpec{Pool: "a100", Quota: quota}}
	}
	cases := map[string]struct {
		team    Team
		wantErr []string
	}{
		"storage and claims per class within the total": {
			team: team(Quota{Storage: q("1Ti"), StorageClasses: map[string]StorageClassQuota{
				"standard": {Storage: q("1Ti")}, "fast-ssd": {Storage: q("100Gi"), Claims: n(4)}, "archive": {Claims: n(0)},
			}}),
		},
		"a class without a total": {team: team(Quota{StorageClasses: map[string]StorageClassQuota{"fast.example.com": {Storage: q("10Ti")}}})},
		"a key that is no class name": {
			team:    team(Quota{StorageClasses: map[string]StorageClassQuota{"Fast_SSD": {Claims: n(1)}}}),
			wantErr: []string{"spec.quota.storageClasses[Fast_SSD]", "keys are StorageClass names", "at most 225 characters"},
		},
		"a key too long for the quota's resource names": {
			team:    team(Quota{StorageClasses: map[string]StorageClassQuota{strings.Repeat("a", 226): {Claims: n(1)}}}),
			wantErr: []string{"spec.quota.storageClasses[" + strings.Repeat("a", 226) + "]", "at most 225 characters"},
		},
		"an entry limiting nothing": {
			team:    team(Quota{StorageClasses: map[string]StorageClassQuota{"standard": {}}}),
			wantErr: []string{"spec.quota.storageClasses[standard]", "set storage (e.g. 500Gi), claims (e.g. 10) or both"},
		},
		"negative storage": {
			team:    team(Quota{StorageClasses: map[string]StorageClassQuota{"standard": {Storage: q("-1Gi")}}}),
			wantErr: []string{"spec.quota.storageClasses[standard].storage", "-1Gi", "is negative"},
		},
		"more than the total": {
			team:    team(Quota{Storage: q("100Gi"), StorageClasses: map[string]StorageClassQuota{"standard": {Storage: q("200Gi")}}}),
			wantErr: []string{"spec.quota.storageClasses[standard].storage", "200Gi", "exceeds spec.quota.storage (100Gi)", "lower it to at most 100Gi or raise spec.quota.storage"},
		},
		"claims out of range": {
			team:    team(Quota{StorageClasses: map[string]StorageClassQuota{"standard": {Claims: n(-1)}}}),
			wantErr: []string{"spec.quota.storageClasses[standard].claims", "-1", "must be between 0 and 100000"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			requireValidation(t, tc.team, tc.wantErr)
		})
	}
}
