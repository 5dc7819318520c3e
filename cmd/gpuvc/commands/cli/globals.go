package cli

import (
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Globals are the flags every command accepts. They live in a struct handed to each
// command's constructor rather than in package variables, so tests can build commands
// side by side.
type Globals struct {
	Kubeconfig string
	Context    string
}

// AddFlags registers the global flags on a root command's persistent flag set.
func (g *Globals) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.Kubeconfig, "kubeconfig", "", "path to the host cluster's kubeconfig (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&g.Context, "context", "", "kubeconfig context to use (default: the current context)")
}

// ClientConfig resolves the kubeconfig the way kubectl does: --kubeconfig, then
// $KUBECONFIG, then ~/.kube/config, with --context overriding the current context.
func (g *Globals) ClientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = g.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: g.Context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// RESTConfig returns the REST configuration for the host cluster.
func (g *Globals) RESTConfig() (*rest.Config, error) {
	return g.ClientConfig().ClientConfig()
}
