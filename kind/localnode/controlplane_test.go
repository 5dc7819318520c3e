package localnode_test

import (
	"crypto/tls"
	"net/url"
	slices "slices"
	"testing"

	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/kind/localnode"
)

// TestControlPlaneServesTheNode: started with NodeIP, the API server advertises
// the node IP as the `kubernetes` Service's endpoint and its certificate is valid
// for it.
func TestControlPlaneServesTheNode(t *testing.T) {
	cp := forTest(t)
	ctx := testContext(t)
	list, err := cp.Client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	require.Len(t, list.Items[0].Endpoints, 1)
	require.Equal(t, []string{localnode.NodeIP.String()}, list.Items[0].Endpoints[0].Addresses)

	u, err := url.Parse(cp.Server)
	require.NoError(t, err)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the certificate only
	require.NoError(t, err)
	defer conn.Close()
	cert := conn.ConnectionState().PeerCertificates[0]
	require.True(t, slices.ContainsFunc(cert.IPAddresses, localnode.NodeIP.Equal), "serving certificate SANs %v lack the node IP", cert.IPAddresses)
}
