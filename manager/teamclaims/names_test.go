package teamclaims_test

import (
	"testing"

	"github.com/loft-sh/vcluster/pkg/util/translate"
	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/manager/teamclaims"
)

// TestHostNameIsVClustersName: the host name of a claim or template is the one
// vCluster's ResourceClaims and ResourceClaimTemplates mappers give it
// (translate.Default.HostNameShort in single-namespace mode), which its pod
// translator writes into a host pod's spec.resourceClaims.
func TestHostNameIsVClustersName(t *testing.T) {
	saved := translate.VClusterName
	t.Cleanup(func() { translate.VClusterName = saved })
	for _, c := range []struct{ name, namespace, release string }{
		{"one-gpu", "default", "claims"},
		{"gpu", "ml-training", "fraud"},
		{"a-very-long-template-name-that-is-longer-than-anything-vcluster-would-concatenate-safely", "ns", "r"},
	} {
		translate.VClusterName = c.release
		want := translate.NewSingleNamespaceTranslator("team-"+c.release).HostNameShort(nil, c.name, c.namespace)
		require.Equal(t, want.Name, teamclaims.HostName(c.name, c.namespace, c.release), "%+v", c)
	}
}
