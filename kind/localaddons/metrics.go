package localaddons

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregator "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// The Metrics API as metrics-server's own manifests register it: the APIService
// v1beta1.metrics.k8s.io in front of the Service kube-system/metrics-server,
// with insecureSkipTLSVerify (metrics-server serves a self-signed certificate).
// Here that Service has no selector: an EndpointSlice points it at the
// metrics-server process on the node's address, and the API server reaches it
// through the ClusterIP as it would a pod (kube-proxy runs on this machine).
const (
	MetricsAPIService = "v1beta1.metrics.k8s.io"
	metricsNamespace  = "kube-system"
	metricsService    = "metrics-server"
	metricsProcess    = "metrics-server"
	// metricResolution is how often metrics-server scrapes the kubelet (its
	// minimum is 10 s); a pod's usage appears after about two scrapes.
	metricResolution = "10s"
	managedBy        = "gpuvc-localaddons"
)

func (a *Addons) startMetrics(ctx context.Context, cs kubernetes.Interface, cp *localcluster.ControlPlane, opts Options) error {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return err
	}
	port := ports[0]
	p, err := a.start(metricsProcess, opts.MetricsServer, []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--authentication-kubeconfig=" + cp.Kubeconfig,
		"--authorization-kubeconfig=" + cp.Kubeconfig,
		"--bind-address=" + localnode.NodeIP.String(),
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(opts.Dir, "metrics-server-certs"),
		// The kubelet serves a certificate it signed itself (as on kind, where
		// users pass the same flag); its client side checks metrics-server's
		// admin certificate against the cluster CA.
		"--kubelet-insecure-tls",
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-use-node-status-port",
		"--metric-resolution=" + metricResolution,
		// It must stay below the resolution (metrics-server refuses to start
		// otherwise; its default is 10 s).
		"--kubelet-request-timeout=5s",
	}, opts)
	if err != nil {
		return err
	}
	procs := []*supervise.Process{p}
	if err := supervise.WaitHTTP(ctx, "metrics-server", procs, fmt.Sprintf("https://%s:%d/livez", localnode.NodeIP, port)); err != nil {
		return err
	}
	if err := applyMetricsService(ctx, cs, port); err != nil {
		return err
	}
	ag, err := aggregator.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if err := applyAPIService(ctx, ag); err != nil {
		return err
	}
	return supervise.Poll(ctx, "the Metrics API through the API server", procs, func(ctx context.Context) (bool, error) {
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

// applyMetricsService points the Service kube-system/metrics-server at port on
// the node's address.
func applyMetricsService(ctx context.Context, cs kubernetes.Interface, port int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: metricsService, Namespace: metricsNamespace, Labels: map[string]string{"k8s-app": "metrics-server"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(port),
		}}},
	}
	if _, err := cs.CoreV1().Services(metricsNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: metricsService, Namespace: metricsNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: metricsService,
			discoveryv1.LabelManagedBy:   managedBy,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{localnode.NodeIP.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	slices := cs.DiscoveryV1().EndpointSlices(metricsNamespace)
	if _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		old, err := slices.Get(ctx, metricsService, metav1.GetOptions{})
		if err != nil {
			return err
		}
		slice.ResourceVersion = old.ResourceVersion
		_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
		return err
	} else if err != nil {
		return err
	}
	return nil
}

func applyAPIService(ctx context.Context, ag aggregator.Interface) error {
	s := &apiregv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: MetricsAPIService, Labels: map[string]string{"k8s-app": "metrics-server"}},
		Spec: apiregv1.APIServiceSpec{
			Service:               &apiregv1.ServiceReference{Namespace: metricsNamespace, Name: metricsService, Port: ptr.To(int32(443))},
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
