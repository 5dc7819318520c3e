package teamevents_test

import (
	"context"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/manager/teamevents"
)

// countingReader counts the reads that reach the host API server.
type countingReader struct {
	client.Reader
	reads atomic.Int64
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.reads.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.reads.Add(1)
	return r.Reader.List(ctx, list, opts...)
}

// A session costs the host its four reads once and is kept while it works;
// after a failed request, and where no control plane serves, the team is
// looked at again only after a back-off.
func TestSessionsKeepTheClientUntilARequestFails(t *testing.T) {
	ctx := localcp.Context(t, 5*time.Minute)
	ns, labels := standIn(ctx, t, "ses")
	apiServer, err := url.Parse(cp.Server)
	require.NoError(t, err)
	var dials atomic.Int64
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, apiServer.Host) // the pod's API server is the test's
	}
	host := &countingReader{Reader: c}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC))
	s := teamevents.NewSessions(host, dial, "gpuvc-test", time.Minute)
	teamevents.SetSessionsClock(s, clk)
	use := func() {
		t.Helper()
		vc, err := s.Client(ctx, ns, "ses")
		require.NoError(t, err)
		require.NotNil(t, vc, "a ready control plane serves")
		_, err = vc.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
	}

	readyPodIP(ctx, t, ns, labels, true)
	use()
	require.EqualValues(t, 4, host.reads.Load(), "StatefulSet, pods, Service, Secret")
	require.EqualValues(t, 1, dials.Load())
	for range 3 {
		use()
	}
	require.EqualValues(t, 4, host.reads.Load(), "a kept session reads nothing of the host")
	require.EqualValues(t, 1, dials.Load(), "and keeps its connection")

	s.Failed(ns)
	vc, err := s.Client(ctx, ns, "ses")
	require.NoError(t, err)
	require.Nil(t, vc, "a failed session is looked for again after the back-off, not at once")
	require.EqualValues(t, 4, host.reads.Load())
	clk.Step(16 * time.Second)
	use()
	require.EqualValues(t, 8, host.reads.Load(), "after a failure and its back-off the control plane is found again")

	// Asleep: the look finds no ready pod, and the next ones wait.
	scale(ctx, t, ns, "ses", 0)
	readyPodIP(ctx, t, ns, labels, false)
	s.Failed(ns)
	clk.Step(16 * time.Second)
	vc, err = s.Client(ctx, ns, "ses")
	require.NoError(t, err)
	require.Nil(t, vc)
	looked := host.reads.Load()
	require.EqualValues(t, 11, looked, "StatefulSet, pods, Service; no Secret without a pod")
	vc, err = s.Client(ctx, ns, "ses")
	require.NoError(t, err)
	require.Nil(t, vc)
	require.Equal(t, looked, host.reads.Load(), "no look during the back-off")

	scale(ctx, t, ns, "ses", 1)
	readyPodIP(ctx, t, ns, labels, true)
	vc, err = s.Client(ctx, ns, "ses")
	require.NoError(t, err)
	require.Nil(t, vc, "still backing off")
	clk.Step(31 * time.Second) // the second failure in a row: 30 s
	use()
	require.Equal(t, looked+4, host.reads.Load())
}

// A kubeconfig client-go cannot use (its CA not PEM) is an error naming the
// Secret at every look, never a kept session that fails at its first use.
func TestSessionsRefuseAKubeconfigThatCannotMakeAClient(t *testing.T) {
	ctx := localcp.Context(t, 5*time.Minute)
	ns, labels := standIn(ctx, t, "badca")
	readyPodIP(ctx, t, ns, labels, true)
	bad := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://badca.example:443", certificate-authority-data: bm90IGEgY2VydGlmaWNhdGU=}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	secret := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: contract.KubeconfigSecretName}, secret))
	secret.Data[contract.KubeconfigSecretKey] = bad
	require.NoError(t, c.Update(ctx, secret))

	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC))
	s := teamevents.NewSessions(c, nil, "gpuvc-test", time.Minute)
	teamevents.SetSessionsClock(s, clk)
	for range 2 {
		vc, err := s.Client(ctx, ns, "badca")
		require.ErrorContains(t, err, contract.KubeconfigSecretName)
		require.Nil(t, vc)
		vc, err = s.Client(ctx, ns, "badca") // backing off: nothing, not a broken client
		require.NoError(t, err)
		require.Nil(t, vc)
		clk.Step(time.Minute)
	}
}
