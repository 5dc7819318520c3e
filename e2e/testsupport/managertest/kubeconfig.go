package managertest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// ExportKubeconfig creates the Secret vc-<team> that vCluster itself writes once its
// control plane runs. On kwok nodes no container runs, so tests stand in for it.
func ExportKubeconfig(ctx context.Context, cs kubernetes.Interface, team string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["my-vcluster"] = &clientcmdapi.Cluster{Server: "https://localhost:8443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["my-vcluster"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert-of-" + team), ClientKeyData: []byte("key")}
	cfg.Contexts["my-vcluster"] = &clientcmdapi.Context{Cluster: "my-vcluster", AuthInfo: "my-vcluster"}
	cfg.CurrentContext = "my-vcluster"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Secrets(gpuvcv1.HostNamespace(team)).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "vc-" + team},
		Data:       map[string][]byte{"config": b},
	}, metav1.CreateOptions{})
	return err
}
