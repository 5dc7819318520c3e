package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/e2e/testsupport/vcsync"
	"github.com/gpuvc/gpuvc/vclusters"
)

// virtualDefaultsNamespace is where virtual pods are defaulted: a namespace
// without gpuvc's label (no webhook) whose default ServiceAccount mounts no
// token, so a dry-run create returns a pod as a virtual API server of the same
// version stores it, minus the token volume vcsync cannot translate.
const virtualDefaultsNamespace = "virtual-defaults"

// vclusterConfig says how a test's vCluster is installed.
type vclusterConfig int

const (
	// gpuvcValues: the Helm values gpuvc installs vCluster with
	// (vclusters.HelmValues): enforced pool toleration, only the pool's nodes.
	gpuvcValues vclusterConfig = iota
	// chartDefaults: the chart's defaults, as a misconfigured vCluster would run;
	// everything the tenant writes reaches the host and the webhook alone fences it.
	chartDefaults
)

// vclusterSource is a podSource backed by vCluster's own pod syncer (vcsync):
// a tenant's virtual pod is defaulted as the virtual API server would store it,
// vCluster's SyncToHost translates it, and vCluster's create goes to the host API
// server with the vCluster's identity, through gpuvc's webhooks. It is made per
// test: vcsync fails the test it was given.
type vclusterSource struct {
	t      *testing.T
	vc     vcsync.VCluster
	client kubernetes.Interface
	// last is vCluster's last SyncToHost.
	last *vcsync.Result
}

func newVClusterSource(t *testing.T, team string, cfg vclusterConfig) *vclusterSource {
	t.Helper()
	ctx := poll.TestContext(t)
	prepareVClusters(ctx, t)
	user := vclusterUser(team)
	writer, err := client.New(impersonateConfig(env.cp.Config, user), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := impersonate(env.cp.Config, user)
	if err != nil {
		t.Fatal(err)
	}
	vc := vcsync.VCluster{Name: team, HostNamespace: "team-" + team, HostVersion: vcEnv.hostVersion, Host: writer}
	if cfg == gpuvcValues {
		values, err := vclusters.HelmValues(vclusters.Spec{
			Name: team, Namespace: vc.HostNamespace, Pool: "a100", KubeconfigServer: "https://127.0.0.1:8443",
		})
		if err != nil {
			t.Fatal(err)
		}
		vc.Values, vc.Nodes = values, vcEnv.poolNodes
	}
	return &vclusterSource{t: t, vc: vc, client: reader}
}

// errNotSynced is vCluster declining to create a host pod.
type errNotSynced struct {
	requeue bool
	err     error
}

func (e *errNotSynced) Error() string {
	return fmt.Sprintf("vCluster created no host pod (requeue: %v, error: %v)", e.requeue, e.err)
}

func (s *vclusterSource) Create(ctx context.Context, virtual *corev1.Pod) (*corev1.Pod, error) {
	v, err := virtualPod(ctx, virtual)
	if err != nil {
		return nil, err
	}
	s.last = vcsync.SyncToHost(s.t, s.vc, v)
	for _, w := range s.last.Host {
		if w.Verb == "create" {
			if w.Err != nil {
				return nil, w.Err
			}
			return w.Answer.(*corev1.Pod), nil
		}
	}
	return nil, &errNotSynced{requeue: s.last.Requeue, err: s.last.Err}
}

// errVirtualRefused is the virtual API server refusing the tenant's pod: it never
// reaches vCluster.
type errVirtualRefused struct{ err error }

func (e *errVirtualRefused) Error() string {
	return "the virtual API server refuses the pod: " + e.err.Error()
}
func (e *errVirtualRefused) Unwrap() error { return e.err }

// Update and UpdateEphemeralContainers write a changed host pod with the
// vCluster's identity, as directSource does (the attack table's edits).
func (s *vclusterSource) Update(ctx context.Context, host *corev1.Pod) (*corev1.Pod, error) {
	return s.client.CoreV1().Pods(host.Namespace).Update(ctx, host, metav1.UpdateOptions{})
}

func (s *vclusterSource) UpdateEphemeralContainers(ctx context.Context, host *corev1.Pod) (*corev1.Pod, error) {
	return s.client.CoreV1().Pods(host.Namespace).UpdateEphemeralContainers(ctx, host.Name, host, metav1.UpdateOptions{})
}

func (s *vclusterSource) Client() kubernetes.Interface { return s.client }
func (s *vclusterSource) HostNamespace() string        { return s.vc.HostNamespace }

// createVia creates a tenant pod through src and deletes it after the test.
func createVia(ctx context.Context, t *testing.T, src podSource, virtual *corev1.Pod) (*corev1.Pod, error) {
	t.Helper()
	pod, err := src.Create(ctx, virtual)
	if err == nil {
		t.Cleanup(func() { deletePod(src.HostNamespace(), pod.Name) })
	}
	return pod, err
}

// virtualPod returns p as a virtual API server stores it: the real API server's
// defaults and default admission (dry run), in p's virtual namespace.
func virtualPod(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	in := p.DeepCopy()
	ns := in.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	in.Namespace = virtualDefaultsNamespace
	out, err := env.cp.Client.CoreV1().Pods(virtualDefaultsNamespace).Create(ctx, in, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if apierrors.IsInvalid(err) {
		return nil, &errVirtualRefused{err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("defaulting the virtual pod %s: %w", p.Name, err)
	}
	out.Namespace, out.UID, out.ResourceVersion, out.ManagedFields = ns, "", "", nil
	out.CreationTimestamp = metav1.Time{}
	return out, nil
}

// vcEnv is what the vCluster tests share, set up once.
var vcEnv struct {
	once        sync.Once
	err         error
	hostVersion string
	poolNodes   []corev1.Node
}

// prepareVClusters creates the namespace for virtual defaults, creates what
// vCluster's chart creates beyond TestMain's pods role (the workload
// ServiceAccount; pods/status and pods/resize for the vCluster), and reads the host version and the a100
// pool's nodes (what sync.fromHost.nodes shows the virtual cluster).
func prepareVClusters(ctx context.Context, t *testing.T) {
	t.Helper()
	vcEnv.once.Do(func() { vcEnv.err = setUpVClusters(ctx) })
	if vcEnv.err != nil {
		t.Fatalf("setting up the vCluster tests: %v", vcEnv.err)
	}
}

func setUpVClusters(ctx context.Context) error {
	c := env.cp.Client
	if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(virtualDefaultsNamespace, nil), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := env.cp.WaitForServiceAccount(ctx, virtualDefaultsNamespace, "default"); err != nil {
		return err
	}
	sa, err := c.CoreV1().ServiceAccounts(virtualDefaultsNamespace).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		return err
	}
	sa.AutomountServiceAccountToken = ptr.To(false)
	if _, err := c.CoreV1().ServiceAccounts(virtualDefaultsNamespace).Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
		return err
	}
	for team := range teams {
		ns := "team-" + team
		// The chart's workload ServiceAccount, which vCluster puts on every host pod.
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "vc-workload-" + team}, AutomountServiceAccountToken: ptr.To(false)}
		if _, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "vcluster-pod-subresources"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods/status", "pods/resize"}, Verbs: []string{"patch", "update"}},
		}}
		if _, err := c.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "vcluster-pod-subresources"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "vc-" + team, Namespace: ns}},
		}
		if _, err := c.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	info, err := c.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	vcEnv.hostVersion = info.GitVersion
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: contract.LabelPool + "=a100"})
	if err != nil {
		return err
	}
	vcEnv.poolNodes = nodes.Items
	return nil
}

func impersonateConfig(cfg *rest.Config, user string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	return c
}
