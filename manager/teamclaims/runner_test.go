package teamclaims_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamclaims"
)

// TestRunnerFollowsTheTeam runs the manager's sync as the manager runs it: it
// finds the spec.dra Team, reaches the team's cluster through a ready
// control-plane pod with the team's kubeconfig (the stand-in virtual API
// server answers for the pod), copies a template as soon as it is made and
// removes the copy once it is deleted; stopped and started again (a manager
// restart) it catches up on what changed meanwhile; a Team that drops spec.dra
// loses its copies.
func TestRunnerFollowsTheTeam(t *testing.T) {
	ctx := localcp.Context(t, 3*time.Minute)
	c, err := client.New(env.host.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	team := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "runner"}, Spec: gpuvcv1.TeamSpec{
		Pool: "a100", Quota: gpuvcv1.Quota{GPUs: ptr.To[int32](1)}, DRA: &gpuvcv1.DRA{},
	}}
	require.NoError(t, c.Create(ctx, team))
	t.Cleanup(func() { _ = c.Delete(context.Background(), team) })
	ns := hostNamespace(ctx, t, gpuvcv1.HostNamespace(team.Name))
	standInControlPlane(ctx, t, c, ns, team.Name)
	vns := virtualNamespace(ctx, t, "runner")
	vc, hc := env.virtual.Client.ResourceV1(), env.host.Client.ResourceV1()
	hostTemplates := func(ctx context.Context) ([]string, error) {
		l, err := hc.ResourceClaimTemplates(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, t := range l.Items {
			names = append(names, t.Name)
		}
		return names, nil
	}
	until := func(what string, want ...string) {
		t.Helper()
		poll.UntilSeen(ctx, t, 30*time.Second, what, func(ctx context.Context) (bool, string, error) {
			names, err := hostTemplates(ctx)
			return err == nil && equalSets(names, want), "host templates " + joinNames(names), err
		})
	}

	server, err := url.Parse(env.virtual.Server)
	require.NoError(t, err)
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, server.Host)
	}
	start := func() (stop func()) {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		r := teamclaims.New(c, c, env.host.Client, teamclaims.Options{Dial: dial, Teams: 200 * time.Millisecond, Retry: 200 * time.Millisecond})
		go func() { defer close(done); _ = r.Start(runCtx) }()
		return func() { cancel(); <-done }
	}

	stop := start()
	_, err = vc.ResourceClaimTemplates(vns).Create(ctx, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template("first", vns), metav1.CreateOptions{})
	require.NoError(t, err)
	first := teamclaims.HostName("first", vns, team.Name)
	until("the template copied", first)
	require.NoError(t, vc.ResourceClaimTemplates(vns).Delete(ctx, "first", metav1.DeleteOptions{}))
	until("the copy removed")

	_, err = vc.ResourceClaimTemplates(vns).Create(ctx, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template("second", vns), metav1.CreateOptions{})
	require.NoError(t, err)
	second := teamclaims.HostName("second", vns, team.Name)
	until("the second template copied", second)
	stop()
	require.NoError(t, vc.ResourceClaimTemplates(vns).Delete(ctx, "second", metav1.DeleteOptions{}))
	_, err = vc.ResourceClaimTemplates(vns).Create(ctx, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template("third", vns), metav1.CreateOptions{})
	require.NoError(t, err)
	stop = start()
	defer stop()
	until("after a restart: the missed delete done, the missed template copied", teamclaims.HostName("third", vns, team.Name))

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(team), team))
	team.Spec.DRA = nil
	require.NoError(t, c.Update(ctx, team))
	until("a team without spec.dra keeps no copies")
}

// standInControlPlane creates what the sync reads of a team's vCluster: its
// Service, its StatefulSet, a pod of it reported ready (nothing runs it; the
// test's dialer answers for its address with the stand-in virtual API server)
// and the team's kubeconfig Secret, an administrator's of that API server.
func standInControlPlane(ctx context.Context, t *testing.T, c client.Client, ns, release string) {
	t.Helper()
	labels := map[string]string{"app": "vcluster", "release": release}
	require.NoError(t, c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: release, Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP},
		}},
	}))
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "syncer", Image: "ghcr.io/loft-sh/vcluster-oss:0.36.1"}}},
	}
	require.NoError(t, c.Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: release, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), ServiceName: release,
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: release + "-0", Namespace: ns, Labels: labels}, Spec: template.Spec}
	require.NoError(t, c.Create(ctx, pod))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.10",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	require.NoError(t, c.Status().Update(ctx, pod))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, env.virtual.WriteKubeconfig(path, "team-"+release+"-admin", "system:masters"))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	err = c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: contract.KubeconfigSecretName, Namespace: ns},
		Data: map[string][]byte{contract.KubeconfigSecretKey: raw}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
}

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}
