package teamevents_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/teamevents"
)

var (
	c  client.Client
	cp *localcluster.ControlPlane
)

// TestMain starts a real control plane with kwok nodes, which run the stand-in
// control-plane pods and report them ready. The control plane's own API server
// stands in for the team's vCluster: the events land in its default namespace.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(_ context.Context, started *localcluster.ControlPlane) (func(), error) {
		cp = started
		var err error
		c, err = client.New(cp.Config, client.Options{Scheme: scheme.New()})
		return nil, err
	}))
}

// standIn creates what vCluster's chart creates that the recorder reads: the
// Service (https 443 → 8443), the control-plane StatefulSet and the team's
// kubeconfig Secret, here an administrator's kubeconfig of the test API server.
func standIn(ctx context.Context, t *testing.T, team string) (ns string, labels map[string]string) {
	t.Helper()
	ns = gpuvcv1.HostNamespace(team)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	labels = map[string]string{"app": "vcluster", "release": team}
	require.NoError(t, c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: team, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP},
		}},
	}))
	require.NoError(t, c.Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: team, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: team,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "syncer", Image: "ghcr.io/loft-sh/vcluster-oss:0.36.1",
					Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}}}}},
			},
		},
	}))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, cp.WriteKubeconfig(path, "team-"+team+"-admin", "system:masters"))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.KubeconfigSecretName, Namespace: ns},
		Data: map[string][]byte{contract.KubeconfigSecretKey: raw}}))
	return ns, labels
}

// readyPodIP waits until the control plane has (want) or has not (!want) a
// ready pod, and returns its IP.
func readyPodIP(ctx context.Context, t *testing.T, ns string, labels map[string]string, want bool) string {
	t.Helper()
	var ip string
	poll.UntilSeen(ctx, t, 2*time.Minute, "the control plane's ready pod in "+ns, func(ctx context.Context) (bool, string, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return false, "", err
		}
		ip = ""
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
					ip = p.Status.PodIP
				}
			}
		}
		return (ip != "") == want, "ready pod IP " + ip, nil
	})
	return ip
}

func scale(ctx context.Context, t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts))
	orig := sts.DeepCopy()
	sts.Spec.Replicas = &replicas
	require.NoError(t, c.Patch(ctx, sts, client.MergeFrom(orig)))
}

// teamEvents are the gpuvc events on the virtual default Namespace, oldest first.
func teamEvents(ctx context.Context, t *testing.T) []corev1.Event {
	t.Helper()
	l := &corev1.EventList{}
	require.NoError(t, c.List(ctx, l, client.InNamespace(teamevents.Namespace)))
	var out []corev1.Event
	for _, e := range l.Items {
		if e.Source.Component == teamevents.Component && e.InvolvedObject.Kind == "Namespace" {
			out = append(out, e)
		}
	}
	return out
}

// The recorder writes through the team's kubeconfig straight to the ready
// control-plane pod (never the Service, which the waker may answer), holds what
// is decided while no pod is ready, and writes it first once one is.
func TestEventsReachTheTeamsClusterOnlyWhileItServes(t *testing.T) {
	ctx := localcp.Context(t, 5*time.Minute)
	ns, labels := standIn(ctx, t, "evt")
	apiServer, err := url.Parse(cp.Server)
	require.NoError(t, err)
	var mu sync.Mutex
	var dialled []string
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, apiServer.Host) // the pod's API server is the test's
	}
	dials := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), dialled...)
	}
	r := teamevents.New(c, teamevents.Options{Dial: dial})
	tm := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "evt"}}
	before := len(teamEvents(ctx, t))

	ip := readyPodIP(ctx, t, ns, labels, true)
	r.Record(ctx, tm, corev1.EventTypeNormal, "Drowsy", "Route", "idle for 25m")
	require.Equal(t, []string{net.JoinHostPort(ip, "8443")}, dials(), "the pod's target port, not the Service")
	got := teamEvents(ctx, t)[before:]
	require.Len(t, got, 1)
	require.Equal(t, "Drowsy", got[0].Reason)
	require.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "default"}, got[0].InvolvedObject)

	// Asleep: nothing is sent, not even a connection.
	scale(ctx, t, ns, "evt", 0)
	readyPodIP(ctx, t, ns, labels, false)
	r.Record(ctx, tm, corev1.EventTypeNormal, "Waking", "Wake", "a connection arrived")
	require.Len(t, dials(), 1, "no connection while the control plane sleeps")
	require.Equal(t, 1, r.Held("evt"))

	scale(ctx, t, ns, "evt", 1)
	readyPodIP(ctx, t, ns, labels, true)
	r.Record(ctx, tm, corev1.EventTypeNormal, "Awake", "Wake", "woken in 3s")
	require.Zero(t, r.Held("evt"))
	var reasons []string
	for _, e := range teamEvents(ctx, t)[before:] {
		reasons = append(reasons, e.Reason)
	}
	require.ElementsMatch(t, []string{"Drowsy", "Waking", "Awake"}, reasons) // the order is the unit tests'
}
