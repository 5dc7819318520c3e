package vclusters

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restGetter gives Helm a rest.Config instead of kubeconfig files. Helm's kube
// client takes the default namespace of unqualified manifests from it, so each
// release gets a getter for its namespace; discovery and the REST mapper are shared.
type restGetter struct {
	config    *rest.Config
	namespace string
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

var _ genericclioptions.RESTClientGetter = (*restGetter)(nil)

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return namespaceConfig{getter: g}
}

// newRESTMapper maps kinds to resources from discovery, refreshing on a miss (a CRD
// installed after start).
func newRESTMapper(dc discovery.CachedDiscoveryInterface) meta.RESTMapper {
	m := restmapper.NewDeferredDiscoveryRESTMapper(dc)
	return restmapper.NewShortcutExpander(m, dc, nil)
}

// namespaceConfig is the clientcmd.ClientConfig view of a restGetter: Helm only asks
// it for the namespace and the rest.Config.
type namespaceConfig struct{ getter *restGetter }

func (c namespaceConfig) RawConfig() (clientcmdapi.Config, error) {
	return *clientcmdapi.NewConfig(), nil
}

func (c namespaceConfig) ClientConfig() (*rest.Config, error) { return c.getter.ToRESTConfig() }

func (c namespaceConfig) Namespace() (string, bool, error) {
	return c.getter.namespace, true, nil
}

func (c namespaceConfig) ConfigAccess() clientcmd.ConfigAccess {
	// No files: loading rules without paths read nothing.
	return &clientcmd.ClientConfigLoadingRules{}
}
