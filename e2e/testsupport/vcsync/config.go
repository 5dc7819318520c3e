package vcsync

import (
	"encoding/json"
	"strconv"
	"testing"

	vclusterconfig "github.com/loft-sh/vcluster/config"
	"github.com/loft-sh/vcluster/pkg/config"
	"github.com/loft-sh/vcluster/pkg/strvals"
	testingutil "github.com/loft-sh/vcluster/pkg/util/testing"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
)

// config is vCluster's configuration for vc: the chart's default values with
// vc.Values deep-merged over them, parsed and validated by vCluster, inside the
// fake configuration of vCluster's tests (fake host client reporting
// vc.HostVersion).
func (vc VCluster) config(t *testing.T) *config.VirtualClusterConfig {
	t.Helper()
	defaults, err := vclusterconfig.NewDefaultConfig()
	if err != nil {
		t.Fatalf("vCluster's default config: %v", err)
	}
	base, err := asMap(defaults)
	if err != nil {
		t.Fatalf("vCluster's default config: %v", err)
	}
	values, err := asMap(vc.Values)
	if err != nil {
		t.Fatalf("values of vCluster %s: %v", vc.Name, err)
	}
	raw, err := json.Marshal(strvals.MergeMaps(base, values))
	if err != nil {
		t.Fatalf("values of vCluster %s: %v", vc.Name, err)
	}
	parsed, err := config.ParseConfigBytes(raw, vc.Name, nil)
	if err != nil {
		t.Fatalf("vCluster rejects the values of %s: %v", vc.Name, err)
	}

	vConfig := testingutil.NewFakeConfig()
	vConfig.Config = parsed.Config
	vConfig.Name = parsed.Name
	vConfig.HostNamespace = vc.HostNamespace

	v := vc.HostVersion
	if v == "" {
		v = DefaultHostVersion
	}
	parsedVersion, err := utilversion.ParseSemantic(v)
	if err != nil {
		t.Fatalf("HostVersion %q: %v", v, err)
	}
	discovery, ok := vConfig.HostClient.Discovery().(*fakediscovery.FakeDiscovery)
	if !ok {
		t.Fatalf("vCluster's fake config has no fake discovery (%T)", vConfig.HostClient.Discovery())
	}
	discovery.FakedServerVersion = &version.Info{
		Major:      strconv.FormatUint(uint64(parsedVersion.Major()), 10),
		Minor:      strconv.FormatUint(uint64(parsedVersion.Minor()), 10),
		GitVersion: v,
	}
	return vConfig
}

// asMap turns v into the generic form Helm values have (nested map[string]any),
// through JSON.
func asMap(v any) (map[string]any, error) {
	m := map[string]any{}
	if v == nil {
		return m, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return m, nil
	}
	return m, json.Unmarshal(b, &m)
}
