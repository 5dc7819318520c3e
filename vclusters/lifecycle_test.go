package vclusters_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/vclusters"
)

// pollTimeout bounds every wait on the control plane.
const pollTimeout = 90 * time.Second

func testContext(t *testing.T) context.Context {
	return poll.Context(t, 5*time.Minute)
}

func createNamespace(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(name, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// createVolume gives the control plane's claim somewhere to bind: the local
// control plane has no storage provisioner. The claim names no class, so the
// controller-manager binds it to this class-less volume.
func createVolume(ctx context.Context, t *testing.T, c kubernetes.Interface, name, size string) {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name},
			},
		},
	}
	_, err := c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// helmRevisions lists the revisions Helm stores for a release, read straight from
// its Secret storage (labels owner=helm, name=<release>), by revision.
func helmRevisions(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) map[string]string {
	t.Helper()
	list, err := c.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	require.NoError(t, err)
	revs := map[string]string{}
	for _, s := range list.Items {
		revs[s.Labels["version"]] = s.Labels["status"]
	}
	return revs
}

func controlPlanePods(ctx context.Context, c kubernetes.Interface, ns, release string) ([]corev1.Pod, error) {
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=vcluster,release=" + release})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func waitReady(ctx context.Context, t *testing.T, vc *vclusters.Client, spec vclusters.Spec) vclusters.Readiness {
	t.Helper()
	var r vclusters.Readiness
	poll.UntilSeen(ctx, t, pollTimeout, "the vCluster to be ready", func(ctx context.Context) (bool, string, error) {
		var err error
		r, err = vc.Ready(ctx, spec)
		return r.Ready, fmt.Sprintf("%s: %s", r.Reason, r.Message), err
	})
	return r
}

func TestLifecycleRealChart(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := testContext(t)
	c := cp.Client
	const ns = "team-fraud"
	createNamespace(ctx, t, c, ns)
	createVolume(ctx, t, c, "vc-fraud-data", "1Gi")

	vc, err := vclusters.New(cp.Config)
	require.NoError(t, err)
	spec := teamSpec(t, func(s *vclusters.Spec) {
		// Real node sync renders cluster-scoped RBAC: Uninstall must remove it too.
		s.SyncRealNodes = true
		s.Namespace = ns
		s.KubeconfigServer = "https://fraud.vc.gpuvc.test:8443"
		s.Persistence = vclusters.Persistence{Size: "1Gi"}
		// kwok nodes advertise no ephemeral-storage: ask only for cpu and memory.
		s.ControlPlaneResources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		}
	})

	// Before anything exists.
	r, err := vc.Ready(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, vclusters.ReasonReleaseNotFound, r.Reason, r.Message)
	_, err = vc.Kubeconfig(ctx, spec)
	require.ErrorIs(t, err, vclusters.ErrKubeconfigNotFound)

	// Install.
	start := time.Now()
	res, err := vc.Apply(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, vclusters.ApplyResult{Change: vclusters.Installed, Revision: 1}, res)
	t.Logf("install took %s", time.Since(start).Round(time.Millisecond))

	info, err := vc.Release(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, "deployed", info.Status)
	require.Equal(t, "0.36.1", info.ChartVersion)
	require.Equal(t, map[string]string{"1": "deployed"}, helmRevisions(ctx, t, c, ns, "fraud"))

	sts, err := c.AppsV1().StatefulSets(ns).Get(ctx, "fraud", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "ghcr.io/loft-sh/vcluster-oss:0.36.1", syncerImage(t, sts))
	for _, svc := range []string{"fraud", "fraud-headless"} {
		_, err := c.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{})
		require.NoError(t, err, "Service %s", svc)
	}
	_, err = c.RbacV1().ClusterRoles().Get(ctx, "vc-fraud-v-team-fraud", metav1.GetOptions{})
	require.NoError(t, err, "ClusterRole for syncing the pool's nodes")

	// The control-plane pod lands on the CPU node (GPU pools are tainted) and runs.
	poll.UntilSeen(ctx, t, pollTimeout, "the control-plane pod to run on system-0", func(ctx context.Context) (bool, string, error) {
		pods, err := controlPlanePods(ctx, c, ns, "fraud")
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), err
		}
		p := pods[0]
		return p.Spec.NodeName == "system-0" && p.Status.Phase == corev1.PodRunning,
			"pod " + p.Name + ": " + poll.DescribePod(&p), nil
	})
	r = waitReady(ctx, t, vc, spec)
	require.Equal(t, vclusters.ReasonReady, r.Reason)
	t.Logf("ready %s after install: %s", time.Since(start).Round(time.Millisecond), r.Message)

	// Unchanged: no new revision.
	res, err = vc.Apply(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, vclusters.ApplyResult{Change: vclusters.Unchanged, Revision: 1}, res)
	require.Equal(t, map[string]string{"1": "deployed"}, helmRevisions(ctx, t, c, ns, "fraud"))

	// A values change: a new revision, visible in the StatefulSet.
	changed := spec
	changed.ControlPlanePool = "system"
	changed.ControlPlaneResources = &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	res, err = vc.Apply(ctx, changed)
	require.NoError(t, err)
	require.Equal(t, vclusters.ApplyResult{Change: vclusters.Upgraded, Revision: 2}, res)
	require.Equal(t, map[string]string{"1": "superseded", "2": "deployed"}, helmRevisions(ctx, t, c, ns, "fraud"))
	sts, err = c.AppsV1().StatefulSets(ns).Get(ctx, "fraud", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"gpuvc.dev/pool": "system"}, sts.Spec.Template.Spec.NodeSelector)
	requests := syncerContainer(t, sts).Resources.Requests
	require.Equal(t, "512Mi", requests.Memory().String())
	// The rolled-out pod carries the change and the control plane is ready again.
	poll.UntilSeen(ctx, t, pollTimeout, "the control-plane pod to be replaced with the new resources", func(ctx context.Context) (bool, string, error) {
		pods, err := controlPlanePods(ctx, c, ns, "fraud")
		if err != nil || len(pods) != 1 {
			return false, fmt.Sprintf("%d pods", len(pods)), err
		}
		p := pods[0]
		var memStr string
		for _, ctr := range p.Spec.Containers {
			if ctr.Name == "syncer" {
				memStr = ctr.Resources.Requests.Memory().String()
			}
		}
		return memStr == "512Mi" && p.Status.Phase == corev1.PodRunning, fmt.Sprintf("pod memory %s phase %s", memStr, p.Status.Phase), nil
	})
	waitReady(ctx, t, vc, changed)

	res, err = vc.Apply(ctx, changed)
	require.NoError(t, err)
	require.Equal(t, vclusters.ApplyResult{Change: vclusters.Unchanged, Revision: 2}, res)

	// The client remembers a release record it has read; one rewritten since
	// (here marked failed by another Helm client) is read again: Ready tells
	// it, and Apply retries it.
	records := driver.NewSecrets(c.CoreV1().Secrets(ns))
	rev2, err := records.Get("sh.helm.release.v1.fraud.v2")
	require.NoError(t, err)
	rev2.Info.Status, rev2.Info.Description = release.StatusFailed, "failed elsewhere"
	require.NoError(t, records.Update("sh.helm.release.v1.fraud.v2", rev2))
	r, err = vc.Ready(ctx, changed)
	require.NoError(t, err)
	require.Equal(t, vclusters.ReasonReleaseFailed, r.Reason, r.Message)
	res, err = vc.Apply(ctx, changed)
	require.NoError(t, err)
	require.Equal(t, vclusters.ApplyResult{Change: vclusters.Upgraded, Revision: 3}, res)
	res, err = vc.Apply(ctx, changed)
	require.NoError(t, err)
	require.Equal(t, vclusters.ApplyResult{Change: vclusters.Unchanged, Revision: 3}, res)

	// The kubeconfig vCluster would export, written by hand (no real vCluster runs
	// on kwok nodes).
	_, err = c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "vc-fraud", Namespace: ns},
		Data:       map[string][]byte{"config": exportedKubeconfig(t)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	raw, err := vc.Kubeconfig(ctx, changed)
	require.NoError(t, err)
	kcfg, err := clientcmd.Load(raw)
	require.NoError(t, err)
	require.Equal(t, "fraud", kcfg.CurrentContext)
	require.Equal(t, "https://fraud.vc.gpuvc.test:8443", kcfg.Clusters["fraud"].Server)
	require.Equal(t, []byte("client-cert"), kcfg.AuthInfos["fraud"].ClientCertificateData)
	restCfg, err := clientcmd.NewDefaultClientConfig(*kcfg, nil).ClientConfig()
	require.NoError(t, err, "the returned kubeconfig must be usable by client-go")
	require.Equal(t, "https://fraud.vc.gpuvc.test:8443", restCfg.Host)

	// Uninstall removes the release and its objects, and is idempotent.
	require.NoError(t, vc.Uninstall(ctx, changed))
	_, err = vc.Release(ctx, changed)
	require.ErrorIs(t, err, vclusters.ErrReleaseNotFound)
	require.Empty(t, helmRevisions(ctx, t, c, ns, "fraud"))
	poll.UntilSeen(ctx, t, pollTimeout, "the release's objects to be gone", func(ctx context.Context) (bool, string, error) {
		var left []string
		if _, err := c.AppsV1().StatefulSets(ns).Get(ctx, "fraud", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, "StatefulSet/fraud")
		}
		for _, svc := range []string{"fraud", "fraud-headless"} {
			if _, err := c.CoreV1().Services(ns).Get(ctx, svc, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "Service/"+svc)
			}
		}
		if _, err := c.RbacV1().ClusterRoles().Get(ctx, "vc-fraud-v-team-fraud", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, "ClusterRole/vc-fraud-v-team-fraud")
		}
		if pods, err := controlPlanePods(ctx, c, ns, "fraud"); err != nil || len(pods) > 0 {
			left = append(left, fmt.Sprintf("%d control-plane pods", len(pods)))
		}
		return len(left) == 0, strings.Join(left, ", "), nil
	})
	require.NoError(t, vc.Uninstall(ctx, changed), "uninstalling an absent release is success")
	r, err = vc.Ready(ctx, changed)
	require.NoError(t, err)
	require.Equal(t, vclusters.ReasonReleaseNotFound, r.Reason)
}

// With an ephemeral datastore the chart runs a Deployment; Ready follows it too.
func TestEphemeralControlPlaneIsADeployment(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := testContext(t)
	c := cp.Client
	const ns = "team-scratch"
	createNamespace(ctx, t, c, ns)
	vc, err := vclusters.New(cp.Config)
	require.NoError(t, err)
	spec := teamSpec(t, func(s *vclusters.Spec) {
		s.Name = "scratch"
		s.Namespace = ns
		s.Pool = "h100"
		s.Persistence.Ephemeral = true
		s.ControlPlanePool = "system"
		s.ControlPlaneResources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}
	})
	res, err := vc.Apply(ctx, spec)
	require.NoError(t, err)
	require.Equal(t, vclusters.Installed, res.Change)
	_, err = c.AppsV1().Deployments(ns).Get(ctx, "scratch", metav1.GetOptions{})
	require.NoError(t, err)
	r := waitReady(ctx, t, vc, spec)
	require.Contains(t, r.Message, "Deployment")
	require.NoError(t, vc.Uninstall(ctx, spec))
}

// An Apply into a namespace that does not exist says so.
func TestApplyMissingNamespace(t *testing.T) {
	cp := localcp.ForTest(t)
	vc, err := vclusters.New(cp.Config)
	require.NoError(t, err)
	_, err = vc.Apply(testContext(t), teamSpec(t, func(s *vclusters.Spec) { s.Namespace = "team-nowhere" }))
	require.ErrorContains(t, err, "host namespace team-nowhere does not exist")
}

// A malformed exported kubeconfig is told apart from one not written yet.
func TestKubeconfigMalformed(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := testContext(t)
	const ns = "team-broken"
	createNamespace(ctx, t, cp.Client, ns)
	vc, err := vclusters.New(cp.Config)
	require.NoError(t, err)
	spec := teamSpec(t, func(s *vclusters.Spec) { s.Name = "broken"; s.Namespace = ns })
	_, err = cp.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "vc-broken", Namespace: ns},
		Data:       map[string][]byte{"config": []byte("{not yaml")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = vc.Kubeconfig(ctx, spec)
	require.ErrorIs(t, err, vclusters.ErrKubeconfigMalformed)
	require.False(t, errors.Is(err, vclusters.ErrKubeconfigNotFound))
}

func syncerContainer(t *testing.T, sts *appsv1.StatefulSet) corev1.Container {
	t.Helper()
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == "syncer" {
			return c
		}
	}
	t.Fatalf("StatefulSet %s has no syncer container", sts.Name)
	return corev1.Container{}
}

func syncerImage(t *testing.T, sts *appsv1.StatefulSet) string { return syncerContainer(t, sts).Image }

// exportedKubeconfig is shaped like vCluster's: one context, aimed at localhost.
func exportedKubeconfig(t *testing.T) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["my-vcluster"] = &clientcmdapi.Cluster{Server: "https://localhost:8443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["my-vcluster"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("client-cert"), ClientKeyData: []byte("client-key")}
	cfg.Contexts["my-vcluster"] = &clientcmdapi.Context{Cluster: "my-vcluster", AuthInfo: "my-vcluster"}
	cfg.CurrentContext = "my-vcluster"
	b, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return b
}

// Ready names why a control plane does not start, in the scheduler's words: here
// its volume claim has nothing to bind to.
func TestReadyExplainsUnschedulableControlPlane(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := testContext(t)
	const ns = "team-nodisk"
	createNamespace(ctx, t, cp.Client, ns)
	vc, err := vclusters.New(cp.Config)
	require.NoError(t, err)
	spec := teamSpec(t, func(s *vclusters.Spec) {
		s.Name = "nodisk"
		s.Namespace = ns
		s.ControlPlaneResources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}
	})
	_, err = vc.Apply(ctx, spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = vc.Uninstall(context.Background(), spec) })
	poll.UntilSeen(ctx, t, pollTimeout, "Ready to explain the unschedulable pod", func(ctx context.Context) (bool, string, error) {
		r, err := vc.Ready(ctx, spec)
		if err != nil {
			return false, "", err
		}
		return !r.Ready && r.Reason == vclusters.ReasonControlPlaneStarting &&
			strings.Contains(r.Message, "pod nodisk-0 cannot be scheduled") &&
			strings.Contains(r.Message, "PersistentVolumeClaim"), r.Reason + ": " + r.Message, nil
	})
	r, err := vc.Ready(ctx, spec)
	require.NoError(t, err)
	t.Logf("%s: %s", r.Reason, r.Message)
}
