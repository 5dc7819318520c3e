// Package identity lets a test act as one of gpuvc's components: a kubeconfig
// and a client that authenticate as the component's ServiceAccount, so the test
// meets exactly the RBAC the component gets.
package identity

import (
	"context"
	"path/filepath"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// ServiceAccount writes, in the test's temporary directory, a kubeconfig for
// host's API server that authenticates with a one-hour token of ServiceAccount
// ns/sa (which must exist; admin creates the token), and returns its path and a
// client built from that file.
func ServiceAccount(ctx context.Context, t testing.TB, admin kubernetes.Interface, host *rest.Config, ns, sa string) (string, kubernetes.Interface) {
	t.Helper()
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of ServiceAccount %s/%s: %v", ns, sa, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: host.Host, CertificateAuthority: host.CAFile, CertificateAuthorityData: host.CAData}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: sa}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return path, client
}
