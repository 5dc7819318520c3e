package teamevents

import (
	"context"
	"fmt"
	"net"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// connect is a client of the team's virtual cluster that reaches a ready
// control-plane pod directly (TeamConfig). Nil without error when no pod is
// ready.
func connect(ctx context.Context, reader client.Reader, dial func(context.Context, string, string) (net.Conn, error), namespace, release string) (sink, error) {
	cfg, err := TeamConfig(ctx, reader, dial, namespace, release)
	if err != nil || cfg == nil {
		return nil, err
	}
	cfg.UserAgent = "gpuvc-manager/team-events"
	// A client of its own, whose connections are closed after the write: the
	// next event may find another pod, or none.
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return events{cs: cs, hc: hc}, nil
}

// TeamConfig is the configuration of a client of the team's virtual cluster
// that reaches a ready control-plane pod directly, never through the Service
// (which leads to the waker while the cluster is drowsy or asleep, where a
// connection counts as the team's activity): the kubeconfig's credentials and
// server name (its certificate is checked against the kubeconfig's server, as
// the team's own clients do), dialled at the pod with dial (nil: a
// net.Dialer's). Nil without error when no pod is ready. Team events, the
// team's nodes (manager/virtualnodes) and gpuvc's claim sync
// (manager/teamclaims) reach the team's cluster this way.
func TeamConfig(ctx context.Context, reader client.Reader, dial func(context.Context, string, string) (net.Conn, error), namespace, release string) (*rest.Config, error) {
	addr, err := ControlPlaneAddress(ctx, reader, namespace, release)
	if err != nil || addr == "" {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: contract.KubeconfigSecretName}, secret); err != nil {
		return nil, fmt.Errorf("reading the team's kubeconfig %s/%s: %w", namespace, contract.KubeconfigSecretName, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[contract.KubeconfigSecretKey])
	if err != nil {
		return nil, fmt.Errorf("team kubeconfig %s/%s: %w", namespace, contract.KubeconfigSecretName, err)
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	cfg.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) { return dial(ctx, network, addr) }
	return cfg, nil
}

type events struct {
	cs kubernetes.Interface
	hc *http.Client
}

func (e events) Close() { e.hc.CloseIdleConnections() }

func (e events) Create(ctx context.Context, ev *corev1.Event) error {
	_, err := e.cs.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}
