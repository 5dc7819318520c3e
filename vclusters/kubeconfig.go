package vclusters

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigKey is the key of the exported kubeconfig in its Secret.
const kubeconfigKey = "config"

var (
	// ErrKubeconfigNotFound: vCluster has not exported the kubeconfig yet (it does so
	// once its control plane has started). Retry later.
	ErrKubeconfigNotFound = errors.New("vCluster has not exported its kubeconfig yet")
	// ErrKubeconfigMalformed: the Secret exists but holds no usable kubeconfig.
	ErrKubeconfigMalformed = errors.New("the kubeconfig vCluster exported is malformed")
)

// KubeconfigSecretName is the host Secret vCluster writes its kubeconfig to.
func KubeconfigSecretName(release string) string { return "vc-" + release }

// Kubeconfig returns the kubeconfig of spec's virtual cluster for its team: the one
// vCluster exported, pointed at spec.KubeconfigServer, with a single cluster, user
// and context named spec.ContextName (default spec.Name).
func (c *Client) Kubeconfig(ctx context.Context, spec Spec) ([]byte, error) {
	name := KubeconfigSecretName(spec.Name)
	secret, err := c.kube.CoreV1().Secrets(spec.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: Secret %s/%s does not exist", ErrKubeconfigNotFound, spec.Namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", spec.Namespace, name, err)
	}
	raw, ok := secret.Data[kubeconfigKey]
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("%w: Secret %s/%s has no %q key", ErrKubeconfigMalformed, spec.Namespace, name, kubeconfigKey)
	}
	out, err := teamKubeconfig(raw, spec.KubeconfigServer, spec.contextName())
	if err != nil {
		return nil, fmt.Errorf("%w: Secret %s/%s: %v", ErrKubeconfigMalformed, spec.Namespace, name, err)
	}
	return out, nil
}

// teamKubeconfig keeps the exported kubeconfig's current context — its cluster and
// credentials — and nothing else, renamed to name and, when server is set, aimed at
// server.
func teamKubeconfig(raw []byte, server, name string) ([]byte, error) {
	in, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %v", err)
	}
	ctxName := in.CurrentContext
	if ctxName == "" && len(in.Contexts) == 1 {
		for n := range in.Contexts {
			ctxName = n
		}
	}
	kctx, ok := in.Contexts[ctxName]
	if !ok {
		return nil, fmt.Errorf("no current context (current-context %q, %d contexts)", in.CurrentContext, len(in.Contexts))
	}
	cluster, ok := in.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("context %q names cluster %q, which is missing", ctxName, kctx.Cluster)
	}
	user, ok := in.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("context %q names user %q, which is missing", ctxName, kctx.AuthInfo)
	}
	cluster = cluster.DeepCopy()
	if server != "" {
		cluster.Server = server
	}
	if cluster.Server == "" {
		return nil, fmt.Errorf("cluster %q has no server", kctx.Cluster)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = cluster
	out.AuthInfos[name] = user.DeepCopy()
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: kctx.Namespace}
	out.CurrentContext = name
	return clientcmd.Write(*out)
}
