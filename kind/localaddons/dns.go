package localaddons

import (
	"context"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// Cluster DNS as kubeadm and kind install it: CoreDNS in kube-system, its pods
// labelled k8s-app=kube-dns (what NetworkPolicies select DNS by: gpuvc's team
// default deny allows egress to exactly those pods on port 53), behind the
// Service kube-dns at a fixed ClusterIP that the real node's kubelet hands to
// every ClusterFirst pod. Without it a pod resolves no Service name: vCluster's
// control plane dials the host's metrics-server as
// metrics-server.kube-system, so a team's `kubectl top` needs it.
const (
	// DNSServiceIP is kube-dns's ClusterIP: the tenth address of the Service
	// range, as kubeadm picks it. localstack passes it to the kubelet.
	DNSServiceIP = "10.96.0.10"
	// systemNamespace holds the cluster's add-ons, DNS and metrics-server.
	systemNamespace = "kube-system"
	dnsName         = "coredns"
	dnsService      = "kube-dns"
	dnsAppLabel     = "kube-dns"
	// dnsReadyPort serves CoreDNS's ready plugin.
	dnsReadyPort = 8181
)

// corefile answers for the cluster's zones only: pods reach nothing outside
// the pod and Service ranges here, so there is no upstream to forward to.
const corefile = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        ttl 30
    }
    cache 30
    loadbalance
}
`

// startDNS applies CoreDNS and kube-dns and waits until a query for the
// kubernetes Service through kube-dns's ClusterIP answers its address.
func startDNS(ctx context.Context, cs kubernetes.Interface, opts Options) error {
	labels := map[string]string{"k8s-app": dnsAppLabel}
	if err := applyRBAC(ctx, cs, dnsName, "system:coredns", []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("endpoints", "services", "pods", "namespaces").WithVerbs("list", "watch"),
		rbacv1ac.PolicyRule().WithAPIGroups("discovery.k8s.io").WithResources("endpointslices").WithVerbs("list", "watch"),
	}); err != nil {
		return err
	}
	if _, err := cs.CoreV1().ConfigMaps(systemNamespace).Apply(ctx,
		corev1ac.ConfigMap(dnsName, systemNamespace).WithData(map[string]string{"Corefile": corefile}), apply); err != nil {
		return err
	}
	// CoreDNS binds port 53: the image runs as nonroot without file
	// capabilities, so the container runs as root with NET_BIND_SERVICE only,
	// as kubeadm's CoreDNS drops everything else.
	container := corev1ac.Container().WithName("coredns").WithImage(opts.DNSImage).WithImagePullPolicy(corev1.PullNever).
		WithArgs("-conf", "/etc/coredns/Corefile").
		WithPorts(
			corev1ac.ContainerPort().WithName("dns").WithContainerPort(53).WithProtocol(corev1.ProtocolUDP),
			corev1ac.ContainerPort().WithName("dns-tcp").WithContainerPort(53).WithProtocol(corev1.ProtocolTCP),
		).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/coredns").WithReadOnly(true)).
		WithReadinessProbe(corev1ac.Probe().WithPeriodSeconds(1).
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/ready").WithPort(intstr.FromInt32(dnsReadyPort)))).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsUser(0).WithRunAsNonRoot(false).
			WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL").WithAdd("NET_BIND_SERVICE")))
	deployment := appsv1ac.Deployment(dnsName, systemNamespace).WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(dnsName).
					WithPriorityClassName("system-cluster-critical").
					WithNodeSelector(map[string]string{corev1.LabelHostname: opts.Node}).
					// Its own resolver is the node's (loopback): ClusterFirst
					// would point CoreDNS at itself.
					WithDNSPolicy(corev1.DNSDefault).
					WithContainers(container).
					WithVolumes(corev1ac.Volume().WithName("config").
						WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(dnsName))))))
	if _, err := cs.AppsV1().Deployments(systemNamespace).Apply(ctx, deployment, apply); err != nil {
		return err
	}
	service := corev1ac.Service(dnsService, systemNamespace).
		WithLabels(map[string]string{"k8s-app": dnsAppLabel, "kubernetes.io/name": "CoreDNS"}).
		WithSpec(corev1ac.ServiceSpec().WithClusterIP(DNSServiceIP).WithSelector(labels).WithPorts(
			corev1ac.ServicePort().WithName("dns").WithPort(53).WithProtocol(corev1.ProtocolUDP).WithTargetPort(intstr.FromInt32(53)),
			corev1ac.ServicePort().WithName("dns-tcp").WithPort(53).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromInt32(53)),
		))
	if _, err := cs.CoreV1().Services(systemNamespace).Apply(ctx, service, apply); err != nil {
		return err
	}
	return waitResolves(ctx, "kubernetes.default.svc.cluster.local.", localcluster.ServiceIP)
}

// waitResolves asks kube-dns (through its ClusterIP: kube-proxy runs on this
// machine) for name until it answers want.
func waitResolves(ctx context.Context, name, want string) error {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(DNSServiceIP, "53"))
	}}
	return supervise.Poll(ctx, fmt.Sprintf("cluster DNS (%s at %s) answering %s", dnsService, DNSServiceIP, name), nil, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, name)
		if err != nil {
			return false, err
		}
		for _, a := range addrs {
			if a == want {
				return true, nil
			}
		}
		return false, fmt.Errorf("%s resolves to %v, not %s", name, addrs, want)
	})
}

// applyRBAC gives the ServiceAccount kube-system/name the cluster role
// clusterRole made of rules.
func applyRBAC(ctx context.Context, cs kubernetes.Interface, name, clusterRole string, rules []*rbacv1ac.PolicyRuleApplyConfiguration) error {
	if _, err := cs.CoreV1().ServiceAccounts(systemNamespace).Apply(ctx, corev1ac.ServiceAccount(name, systemNamespace), apply); err != nil {
		return err
	}
	if _, err := cs.RbacV1().ClusterRoles().Apply(ctx, rbacv1ac.ClusterRole(clusterRole).WithRules(rules...), apply); err != nil {
		return err
	}
	_, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(clusterRole).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(clusterRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(systemNamespace).WithName(name)), apply)
	return err
}
