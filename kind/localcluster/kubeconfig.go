package localcluster

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
	return writeKubeconfigData(p.CA.CertPEM, server, user, cert, key, path)
}

func writeKubeconfigData(caPEM []byte, server, user string, cert, key []byte, path string) error {
	const name = "gpuvc-localcp"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// WriteKubeconfig writes a standalone kubeconfig at path for a new client
// certificate (commonName in the groups orgs, signed by the cluster CA) that talks to
// the API server at cp.Server: the credentials of a kubelet, kube-proxy or any other
// component run next to the control plane.
func (cp *ControlPlane) WriteKubeconfig(path, commonName string, orgs ...string) error {
	cert, key, err := cp.PKI.ClientCert(commonName, orgs...)
	if err != nil {
		return err
	}
	return writeKubeconfigData(cp.PKI.CA.CertPEM, cp.Server, commonName, cert, key, path)
}
