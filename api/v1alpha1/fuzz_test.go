package v1alpha1_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/charts"
)

// FuzzTeamValidation builds Teams from random fields and checks Validate and the
// CRD's defaulting (applied in process with the API server's own algorithm, from
// the chart's CRD): no panic; every error names a field path under metadata or
// spec, and its message shows it; Validate changes nothing and gives the same
// answer twice; and a Team Validate accepts is still accepted after a JSON round
// trip (what the API server stores) and after defaulting, and defaulting twice is
// defaulting once. Whether the CRD refuses what Validate refuses is
// TestGoAndCRDValidationAgree's job (it needs the API server).
//
// It runs under -short (the package's TestMain otherwise starts an API server
// in every fuzz worker): go test -short -run '^$' -fuzz FuzzTeamValidation ./api/v1alpha1/
func FuzzTeamValidation(f *testing.F) {
	f.Add("fraud", "a100", int32(4), "1g.10gb", int32(4), "3g.40gb", int32(1), "64", int32(100), int32(2), int32(8), "", "baseline", "Group", "fraud-ml", "10.0.0.0/8", "0.30.0", uint16(0xfdff))
	f.Add("a.b", "A100", int32(-1), "1g.7gb", int32(-3), "1g.10gb+me", int32(5000), "-1", int32(0), int32(65), int32(1), "3g.40gb", "strict", "Robot", "", "10.0.0.0/33", "latest", uint16(0x5555))
	f.Add("minimal", "a100", int32(0), "", int32(0), "", int32(0), "", int32(0), int32(0), int32(0), "", "", "", "", "", "", uint16(0))
	f.Add(strings.Repeat("a", 41), "a100-", int32(0), "7g.80gb", int32(1), "7g.80gb", int32(1), "1e3", int32(100001), int32(3), int32(48), "7g.80gb", "restricted", "User", strings.Repeat("u", 254), "::/0", "v1.2.3-rc.1", uint16(0xaaaa))
	f.Fuzz(func(t *testing.T, name, pool string, gpus int32, mig1 string, n1 int32, mig2 string, n2 int32, cpu string,
		pods, maxPerPod, maxShared int32, wholeAs, podSecurity, memberKind, memberName, cidr, chartVersion string, present uint16,
	) {
		has := func(bit uint) bool { return present&(1<<bit) != 0 }
		team := &v1alpha1.Team{}
		team.Name = name
		team.Spec.Pool, team.Spec.PodSecurity = pool, podSecurity
		q := &team.Spec.Quota
		if has(0) {
			q.GPUs = &gpus
		}
		if has(1) {
			q.MIG = map[string]int32{mig1: n1}
			if has(2) {
				q.MIG[mig2] = n2
			}
		}
		if v, err := resource.ParseQuantity(cpu); err == nil && has(3) {
			q.CPU = &v
		}
		if has(4) {
			q.Pods = &pods
		}
		if has(5) {
			team.Spec.MaxGPUsPerPod = &maxPerPod
		}
		if has(6) {
			team.Spec.GPUSharing = &v1alpha1.GPUSharing{Fractions: has(7), MaxPodsPerSharedGPU: maxShared, WholeGPUAs: wholeAs}
		}
		if has(8) {
			team.Spec.Members = []v1alpha1.Member{{Kind: memberKind, Name: memberName}}
			if has(9) {
				team.Spec.Members = append(team.Spec.Members, v1alpha1.Member{Kind: memberKind, Name: memberName})
			}
		}
		if has(10) {
			team.Spec.Network = &v1alpha1.Network{}
			if cidr != "" {
				team.Spec.Network.AllowedEgressCIDRs = []string{cidr}
			}
		}
		if has(11) {
			team.Spec.VCluster = &v1alpha1.VClusterSpec{ChartVersion: chartVersion}
		}

		before := team.DeepCopy()
		errs := team.Validate()
		if d := cmp.Diff(before, team); d != "" {
			t.Fatalf("Validate changed the Team:\n%s", d)
		}
		checkErrors(t, errs)
		if again := team.Validate(); !cmp.Equal(errs, again) {
			t.Fatalf("Validate answered twice differently:\n%v\n%v", errs, again)
		}
		if len(errs) > 0 {
			return
		}
		stored := roundTrip(t, team)
		if errs := stored.Validate(); len(errs) > 0 {
			t.Fatalf("accepted, refused after a JSON round trip: %v\n%+v", errs, stored.Spec)
		}
		defaulted := applyCRDDefaults(t, stored)
		if errs := defaulted.Validate(); len(errs) > 0 {
			t.Fatalf("accepted, refused after the CRD's defaults: %v\n%+v", errs, defaulted.Spec)
		}
		if d := cmp.Diff(defaulted, applyCRDDefaults(t, defaulted)); d != "" {
			t.Fatalf("defaulting twice differs from once:\n%s", d)
		}
	})
}

// checkErrors: each error names a path under metadata or spec, and the message a
// user reads shows that path.
func checkErrors(t *testing.T, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "metadata.") && !strings.HasPrefix(e.Field, "spec.") {
			t.Fatalf("error without a field path: %q (%v)", e.Field, e)
		}
		if !strings.Contains(e.Error(), e.Field) {
			t.Fatalf("message does not show its field %s: %v", e.Field, e)
		}
		if e.Detail == "" && e.Type != field.ErrorTypeRequired && e.Type != field.ErrorTypeNotSupported &&
			e.Type != field.ErrorTypeTooMany && e.Type != field.ErrorTypeDuplicate {
			t.Fatalf("error of type %s without a detail saying what to do: %v", e.Type, e)
		}
	}
}

func roundTrip(t *testing.T, team *v1alpha1.Team) *v1alpha1.Team {
	t.Helper()
	b, err := json.Marshal(team)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := &v1alpha1.Team{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return out
}

// applyCRDDefaults defaults a Team as the API server does from the CRD's schema.
func applyCRDDefaults(t *testing.T, team *v1alpha1.Team) *v1alpha1.Team {
	t.Helper()
	schema := teamSchema(t)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(team)
	if err != nil {
		t.Fatalf("to unstructured: %v", err)
	}
	defaulting.Default(obj, schema)
	out := &v1alpha1.Team{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, out, true); err != nil {
		t.Fatalf("defaulted Team does not decode: %v\n%v", err, obj)
	}
	return out
}

var schemaOnce = sync.OnceValues(func() (*structuralschema.Structural, error) {
	crds, err := charts.CRDs()
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind != "Team" {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name != v1alpha1.GroupVersion.Version {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return nil, err
			}
			return structuralschema.NewStructural(&internal)
		}
	}
	return nil, errNoTeamSchema
})

var errNoTeamSchema = &field.Error{Type: field.ErrorTypeNotFound, Field: "Team CRD " + v1alpha1.GroupVersion.Version}

func teamSchema(t *testing.T) *structuralschema.Structural {
	t.Helper()
	s, err := schemaOnce()
	if err != nil {
		t.Fatalf("the chart's Team schema: %v", err)
	}
	return s
}
