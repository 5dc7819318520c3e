package syncer

import "testing"

func TestCheckResourceClaims(t *testing.T) {
	runCheckTable(t, checkResourceClaims, map[string]checkCase{
		"no claims": {pod: pod().GPUs("1").Obj()},
		"claim from a template": {pod: pod().ResourceClaim("gpu", "any-gpu").Obj(), reason: ReasonResourceClaim,
			says: []string{"spec.resourceClaims [gpu]", "Dynamic Resource Allocation", "limit: GPUs through nvidia.com/gpu"}},
	})
}
