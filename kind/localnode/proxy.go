package localnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// startKubeProxy starts kube-proxy in iptables mode. It leaves the conntrack
// sysctls alone, serves node ports only on the node IP and does not open node
// ports on loopback (which would need route_localnet).
func (n *Node) startKubeProxy(context.Context) error {
	kubeconfig := n.path("kube-proxy.kubeconfig")
	// The default RBAC binds system:node-proxier to this user.
	if err := n.cp.WriteKubeconfig(kubeconfig, "system:kube-proxy"); err != nil {
		return err
	}
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		return err
	}
	n.proxyHealthz = ports[0]
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + n.Name,
		"--bind-address=" + NodeIP.String(),
		"--proxy-mode=iptables",
		"--cluster-cidr=" + podNetwork,
		"--nodeport-addresses=" + NodeIP.String() + "/32",
		"--iptables-localhost-nodeports=false",
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--healthz-bind-address=127.0.0.1:" + strconv.Itoa(ports[0]),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(ports[1]),
	}
	return n.start("kube-proxy", n.bins.KubeProxy, args, nil)
}

// kubeProxyCleanup runs `kube-proxy --cleanup`, which removes the rules of every
// kube-proxy mode.
func kubeProxyCleanup(ctx context.Context, bin string) error {
	if _, err := os.Stat(bin); bin == "" || err != nil {
		return nil // nothing to run it with; the generic chain cleanup follows
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "--cleanup").CombinedOutput(); err != nil {
		return fmt.Errorf("kube-proxy --cleanup: %w: %s", err, out)
	}
	return nil
}

// kubeRouterUser is the identity of kube-router's NetworkPolicy controller.
const kubeRouterUser = "gpuvc:kube-router"

// startKubeRouter starts kube-router with only its NetworkPolicy controller
// (iptables and ipsets on this host; no routing, no service proxy), reading
// what it needs through a ClusterRole of its own.
func (n *Node) startKubeRouter(ctx context.Context) error {
	if err := n.ensureKubeRouterRBAC(ctx); err != nil {
		return err
	}
	kubeconfig := n.path("kube-router.kubeconfig")
	if err := n.cp.WriteKubeconfig(kubeconfig, kubeRouterUser); err != nil {
		return err
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return err
	}
	n.routerHealthz = ports[0]
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + n.Name,
		"--run-firewall=true",
		"--run-router=false",
		"--run-service-proxy=false",
		"--enable-ipv4=true",
		"--enable-ipv6=false",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--health-port=" + strconv.Itoa(ports[0]),
		"--metrics-port=0",
	}
	return n.start("kube-router", n.bins.KubeRouter, args, nil)
}

func (n *Node) ensureKubeRouterRBAC(ctx context.Context) error {
	const name = "gpuvc:kube-router"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces", "pods", "services", "endpoints", "nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubeRouterUser}},
	}
	rbac := n.cp.Client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRole %s: %w", name, err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRoleBinding %s: %w", name, err)
	}
	return nil
}
