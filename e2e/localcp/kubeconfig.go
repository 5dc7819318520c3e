package localcp

import (
	"os"
	"path/filepath"

	clientcmd "k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig for the client certificate pair <user>.crt/.key
// of the PKI, embedding the certificates so the file stands on its own.
func writeKubeconfig(p *PKI, server, user, path string) error {
	cert, err := os.ReadFile(p.Path(user + ".crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(p.Path(user + ".key"))
	if err != nil {
		return err
	}
	const name = "gpuvc-localcp"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.CA.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}
