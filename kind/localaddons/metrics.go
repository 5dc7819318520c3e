package localaddons

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// The Metrics API as metrics-server's own manifests (components.yaml v0.8.0)
// install it: a pod in kube-system labelled k8s-app=metrics-server serving on
// 10250, the Service kube-system/metrics-server in front of it, the
// APIService v1beta1.metrics.k8s.io (insecureSkipTLSVerify: metrics-server
// serves a self-signed certificate) and its RBAC. A pod rather than a host
// process because that is how a team's vCluster reaches it on a real cluster:
// vCluster's metrics proxy dials metrics-server.kube-system:443 from the team's
// namespace, through cluster DNS and the team's NetworkPolicies, which admit
// pods in kube-system on MetricsServerPort (manager/team/network.go).
const (
	MetricsAPIService = "v1beta1.metrics.k8s.io"
	metricsName       = "metrics-server"
	// MetricsServerPort is metrics-server's secure port in its upstream
	// manifests and Helm chart (since v0.6).
	MetricsServerPort = 10250
	// metricResolution is how often metrics-server scrapes the kubelet (its
	// minimum is 10 s); a pod's usage appears after about two scrapes.
	metricResolution = "10s"
	managedBy        = "gpuvc-localaddons"
)

// apply is how the add-ons write their objects: server-side apply as one
// field manager, taking over fields an earlier bring-up wrote.
var apply = metav1.ApplyOptions{FieldManager: managedBy, Force: true}

func startMetrics(ctx context.Context, cs kubernetes.Interface, cp *localcluster.ControlPlane, opts Options) error {
	labels := map[string]string{"k8s-app": metricsName}
	if err := applyMetricsRBAC(ctx, cs); err != nil {
		return err
	}
	container := corev1ac.Container().WithName("metrics-server").WithImage(opts.MetricsImage).WithImagePullPolicy(corev1.PullNever).
		WithArgs(
			"--cert-dir=/tmp",
			fmt.Sprintf("--secure-port=%d", MetricsServerPort),
			// The kubelet serves a certificate it signed itself (as on kind,
			// where users pass the same flag).
			"--kubelet-insecure-tls",
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-use-node-status-port",
			"--metric-resolution="+metricResolution,
			// It must stay below the resolution (metrics-server refuses to
			// start otherwise; its default is 10 s).
			"--kubelet-request-timeout=5s",
		).
		WithPorts(corev1ac.ContainerPort().WithName("https").WithContainerPort(MetricsServerPort).WithProtocol(corev1.ProtocolTCP)).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp")).
		WithReadinessProbe(corev1ac.Probe().WithPeriodSeconds(1).
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/readyz").WithPort(intstr.FromString("https")).WithScheme(corev1.URISchemeHTTPS))).
		WithSecurityContext(corev1ac.SecurityContext().
			WithRunAsNonRoot(true).WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	deployment := appsv1ac.Deployment(metricsName, systemNamespace).WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithServiceAccountName(metricsName).
					WithPriorityClassName("system-cluster-critical").
					WithNodeSelector(map[string]string{corev1.LabelHostname: opts.Node}).
					WithContainers(container).
					WithVolumes(corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource())))))
	if _, err := cs.AppsV1().Deployments(systemNamespace).Apply(ctx, deployment, apply); err != nil {
		return err
	}
	service := corev1ac.Service(metricsName, systemNamespace).WithLabels(labels).
		WithSpec(corev1ac.ServiceSpec().WithSelector(labels).WithPorts(
			corev1ac.ServicePort().WithName("https").WithPort(443).WithProtocol(corev1.ProtocolTCP).WithTargetPort(intstr.FromString("https"))))
	if _, err := cs.CoreV1().Services(systemNamespace).Apply(ctx, service, apply); err != nil {
		return err
	}
	ag, err := aggregator.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := applyAPIService(ctx, ag); err != nil {
		return err
	}
	return supervise.Poll(ctx, "the Metrics API through the API server", nil, func(ctx context.Context) (bool, error) {
		s, err := ag.ApiregistrationV1().APIServices().Get(ctx, MetricsAPIService, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range s.Status.Conditions {
			if c.Type == apiregv1.Available {
				return c.Status == apiregv1.ConditionTrue, fmt.Errorf("APIService %s Available=%s: %s", MetricsAPIService, c.Status, c.Message)
			}
		}
		return false, fmt.Errorf("APIService %s has no Available condition yet", MetricsAPIService)
	})
}

// applyMetricsRBAC is components.yaml's: read nodes, pods and the kubelet's
// metrics; delegate authentication and authorization to the API server.
func applyMetricsRBAC(ctx context.Context, cs kubernetes.Interface) error {
	if err := applyRBAC(ctx, cs, metricsName, "system:metrics-server", []*rbacv1ac.PolicyRuleApplyConfiguration{
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("nodes/metrics").WithVerbs("get"),
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("pods", "nodes").WithVerbs("get", "list", "watch"),
	}); err != nil {
		return err
	}
	sa := rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(systemNamespace).WithName(metricsName)
	if _, err := cs.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding("metrics-server:system:auth-delegator").
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName("system:auth-delegator")).
		WithSubjects(sa), apply); err != nil {
		return err
	}
	_, err := cs.RbacV1().RoleBindings(systemNamespace).Apply(ctx, rbacv1ac.RoleBinding("metrics-server-auth-reader", systemNamespace).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName("extension-apiserver-authentication-reader")).
		WithSubjects(sa), apply)
	return err
}

func applyAPIService(ctx context.Context, ag aggregator.Interface) error {
	s := &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: MetricsAPIService, Labels: map[string]string{"k8s-app": metricsName}},
		Spec: apiregv1.APIServiceSpec{
			Service:               &apiregv1.ServiceReference{Namespace: systemNamespace, Name: metricsName, Port: ptr.To(int32(443))},
			Group:                 "metrics.k8s.io",
			Version:               "v1beta1",
			InsecureSkipTLSVerify: true,
			GroupPriorityMinimum:  100,
			VersionPriority:       100,
		},
	}
	_, err := ag.ApiregistrationV1().APIServices().Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
