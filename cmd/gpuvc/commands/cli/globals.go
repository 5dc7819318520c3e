package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

// RESTConfig returns the REST configuration for the host cluster. When none is
// found it says which files it looked at and how to get one, instead of
// client-go's advice about KUBERNETES_MASTER.
//
// In a pod, with neither --kubeconfig, $KUBECONFIG nor --context, the pod's
// service account comes before ~/.kube/config (controller-runtime's order): the
// agent runs as root without CAP_DAC_OVERRIDE in a nonroot image, where reading
// the nonroot user's home is refused and would end the lookup with an error.
func (g *Globals) RESTConfig() (*rest.Config, error) {
	if g.Kubeconfig == "" && g.Context == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	cfg, err := g.ClientConfig().ClientConfig()
	if err == nil {
		return cfg, nil
	}
	const hint = "point --kubeconfig or $KUBECONFIG at the host cluster's kubeconfig, or start a local host cluster with `gpuvc dev cluster up` and run the export it prints"
	if g.Kubeconfig != "" {
		if _, serr := os.Stat(g.Kubeconfig); serr != nil {
			return nil, fmt.Errorf("kubeconfig %s (from --kubeconfig) cannot be read: %v; %s", g.Kubeconfig, errors.Unwrap(serr), hint)
		}
		if clientcmd.IsEmptyConfig(err) {
			return nil, fmt.Errorf("kubeconfig %s (from --kubeconfig) names no cluster; %s", g.Kubeconfig, hint)
		}
		return nil, fmt.Errorf("kubeconfig %s (from --kubeconfig): %v", g.Kubeconfig, err)
	}
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("no kubeconfig found (looked at %s); %s", strings.Join(lookedAt(), ", "), hint)
	}
	if clientcmd.IsConfigurationInvalid(err) && g.Context != "" {
		return nil, fmt.Errorf("kubeconfig context %q (from --context): %v; list contexts with `kubectl config get-contexts`", g.Context, err)
	}
	return nil, err
}

// lookedAt lists the kubeconfig files client-go tried, each marked missing or not.
func lookedAt() []string {
	var out []string
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		for _, p := range filepath.SplitList(env) {
			out = append(out, describePath("$KUBECONFIG "+p, p))
		}
		return out
	}
	return append(out, describePath(clientcmd.RecommendedHomeFile, clientcmd.RecommendedHomeFile))
}

func describePath(label, path string) string {
	if _, err := os.Stat(path); err != nil {
		return label + " (missing)"
	}
	return label + " (no cluster in it)"
}
