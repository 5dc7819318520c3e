package idle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// standInVCluster creates what vCluster's chart creates that the idle policy
// touches: the team namespace, the Service <team> (https 443 → 8443, selector
// app=vcluster,release=<team>) and the control-plane StatefulSet, whose pod kwok
// runs and reports ready.
func standInVCluster(ctx context.Context, t *testing.T, team string, sleepAfter time.Duration, ca *testCA, server string) {
	t.Helper()
	tm := testobj.Team(team, "a100").Obj()
	tm.Spec.Idle = &gpuvcv1.Idle{VCluster: &gpuvcv1.VClusterIdle{SleepAfter: metav1.Duration{Duration: sleepAfter}}}
	require.NoError(t, c.Create(ctx, tm))
	ns := gpuvcv1.HostNamespace(team)
	require.NoError(t, c.Create(ctx, testobj.TeamNamespace(team, "a100")))
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), tm)
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	labels := map[string]string{"app": "vcluster", "release": team}
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
	// vCluster's certificates and the team's kubeconfig, which trusts its CA.
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: team + "-certs", Namespace: ns},
		Data: map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM}}))
	kc := clientcmdapi.NewConfig()
	kc.Clusters[team] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM}
	kc.AuthInfos[team] = &clientcmdapi.AuthInfo{Token: "team-token"}
	kc.Contexts[team] = &clientcmdapi.Context{Cluster: team, AuthInfo: team}
	kc.CurrentContext = team
	raw, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.KubeconfigSecretName, Namespace: ns},
		Data: map[string][]byte{contract.KubeconfigSecretKey: raw}}))
	waitReadyPod(ctx, t, ns, labels)
}

func waitReadyPod(ctx context.Context, t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	poll.UntilSeen(ctx, t, 2*time.Minute, "a ready control-plane pod in "+ns, func(ctx context.Context) (bool, string, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return false, "", err
		}
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
					return true, "", nil
				}
			}
		}
		return false, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
}

// teamClientAt is a client of the team's API as its kubeconfig would make it,
// at the waker's address; hangUp closes its connections, as a kubectl that exits.
func teamClientAt(t *testing.T, ca *testCA, server string) (_ kubernetes.Interface, hangUp func()) {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
		return conn, err
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM},
		BearerToken: "team-token", Dial: dial})
	require.NoError(t, err)
	return cs, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
		conns = nil
	}
}

func asleepCondition(ctx context.Context, t *testing.T, team string) *metav1.Condition {
	t.Helper()
	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: team}, tm))
	return apimeta.FindStatusCondition(tm.Status.Conditions, gpuvcv1.ConditionAsleep)
}

func wakerSlice(ctx context.Context, t *testing.T, team string) (*discoveryv1.EndpointSlice, bool) {
	t.Helper()
	s := &discoveryv1.EndpointSlice{}
	err := c.Get(ctx, client.ObjectKey{Namespace: gpuvcv1.HostNamespace(team), Name: contract.WakerSliceName}, s)
	if err != nil {
		require.True(t, client.IgnoreNotFound(err) == nil, err)
		return nil, false
	}
	return s, true
}

// TestSleepAndWake walks a team's vCluster through the idle policy on the real API
// server with a fake clock: awake while recently used; drowsy (the Service routed
// through the waker) at sleepAfter minus the probe; a connection then is proxied
// and keeps it awake; asleep (control plane at zero replicas) after a quiet
// window; a connection to the waker wakes it, waits for a ready pod, passes the
// bytes through and routes the Service back.
func TestSleepAndWake(t *testing.T) {
	ctx := integration(t)
	const team = "sleepy"
	ns := gpuvcv1.HostNamespace(team)
	// A port free now, not a fixed one: a fixed port in the ephemeral range was
	// once taken by another process's connection, and the waker took the next.
	free, err := localcluster.FreePorts(1)
	require.NoError(t, err)
	firstPort := free[0]
	ca := newTestCA(t)
	// The waker's first port is the one the team gets: its kubeconfig names it.
	server := "https://127.0.0.1:" + strconv.Itoa(firstPort)
	standInVCluster(ctx, t, team, 30*time.Minute, ca, server)
	controlPlane := strings.TrimPrefix(ca.controlPlane(t).URL, "https://")
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	s := idle.New(c, c, nil, idle.Options{
		Clock: clk, Probe: 5 * time.Minute, WakerIP: "192.0.2.10", ListenHost: "127.0.0.1",
		Ports: idle.PortRange{First: int32(firstPort), Last: int32(firstPort) + 99},
		// kwok runs no container: every control-plane address is the stand-in.
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, controlPlane)
		},
	})
	svc := func() *corev1.Service {
		got := &corev1.Service{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: team}, got))
		return got
	}
	vc, hangUp := teamClientAt(t, ca, server)
	roundTrip := func(port int32) {
		t.Helper()
		require.Equal(t, int32(firstPort), port)
		defer hangUp()
		v, err := vc.Discovery().ServerVersion()
		require.NoError(t, err, "a request through the waker")
		require.Equal(t, "v1.36.3-standin", v.GitVersion)
	}

	s.Tick(ctx)
	require.Equal(t, gpuvcv1.ReasonAwake, asleepCondition(ctx, t, team).Reason)
	require.NotEmpty(t, svc().Spec.Selector)

	// Drowsy: the Service's selector is saved and removed, the waker's slice added.
	clk.Step(25 * time.Minute)
	s.Tick(ctx)
	cond := asleepCondition(ctx, t, team)
	require.Equal(t, gpuvcv1.ReasonDrowsy, cond.Reason, cond.Message)
	require.Empty(t, svc().Spec.Selector)
	var saved map[string]string
	require.NoError(t, json.Unmarshal([]byte(svc().Annotations[contract.AnnotationIdleSelector]), &saved))
	require.Equal(t, map[string]string{"app": "vcluster", "release": team}, saved)
	slice, ok := wakerSlice(ctx, t, team)
	require.True(t, ok, "no waker EndpointSlice")
	slices := &discoveryv1.EndpointSliceList{}
	require.NoError(t, c.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: team}))
	require.Len(t, slices.Items, 1, "the EndpointSlice controller's slice (the control plane's endpoint) stayed beside the waker's")
	require.Equal(t, []string{"192.0.2.10"}, slice.Endpoints[0].Addresses)
	require.Equal(t, team, slice.Labels[discoveryv1.LabelServiceName])
	port := *slice.Ports[0].Port

	// A connection while drowsy is proxied at once and counts as activity: the
	// next look routes the Service back.
	roundTrip(port)
	s.Tick(ctx)
	require.Equal(t, gpuvcv1.ReasonAwake, asleepCondition(ctx, t, team).Reason)
	require.Equal(t, saved, svc().Spec.Selector)
	_, ok = wakerSlice(ctx, t, team)
	require.False(t, ok, "the waker's EndpointSlice stayed after the Service went back")

	// A quiet probe window: asleep.
	clk.Step(25 * time.Minute)
	s.Tick(ctx)
	clk.Step(5 * time.Minute)
	s.Tick(ctx)
	cond = asleepCondition(ctx, t, team)
	require.Equal(t, metav1.ConditionTrue, cond.Status, cond.Message)
	require.Equal(t, gpuvcv1.ReasonAsleep, cond.Reason)
	sts := &appsv1.StatefulSet{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: team}, sts))
	require.Equal(t, int32(0), *sts.Spec.Replicas)
	require.Equal(t, "1", sts.Annotations[contract.AnnotationAwakeReplicas])
	poll.UntilSeen(ctx, t, 2*time.Minute, "the control-plane pod gone", func(ctx context.Context) (bool, string, error) {
		pods := &corev1.PodList{}
		require.NoError(t, c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(saved)))
		return len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
	slice, ok = wakerSlice(ctx, t, team)
	require.True(t, ok)
	port = *slice.Ports[0].Port

	// The next request wakes it: the waker completes TLS, holds the request until
	// a control-plane pod is ready, answers 503 Retry-After, and client-go's retry
	// reaches the control plane.
	began := time.Now()
	roundTrip(port)
	t.Logf("wake through the waker (kwok pod) took %v", time.Since(began).Round(time.Millisecond))
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: team}, sts))
	require.Equal(t, int32(1), *sts.Spec.Replicas)
	require.NotContains(t, sts.Annotations, contract.AnnotationAwakeReplicas)
	poll.UntilSeen(ctx, t, 2*time.Minute, "the Service routed back after the wake", func(ctx context.Context) (bool, string, error) {
		_, routed := svc().Annotations[contract.AnnotationIdleSelector]
		_, sliceLeft := wakerSlice(ctx, t, team)
		return !routed && !sliceLeft, fmt.Sprintf("routed %v, waker slice %v", routed, sliceLeft), nil
	})
	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: team}, tm))
	cond = apimeta.FindStatusCondition(tm.Status.Conditions, gpuvcv1.ConditionAsleep)
	require.Equal(t, metav1.ConditionFalse, cond.Status)
	require.Equal(t, gpuvcv1.ReasonAwake, cond.Reason, cond.Message)
	require.NotNil(t, tm.Status.Idle.LastWake)
	require.Nil(t, tm.Status.Idle.AsleepSince)
}
