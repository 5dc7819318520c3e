package vclusters

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func kubeconfigBytes(t *testing.T, mutate func(*clientcmdapi.Config)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["vc"] = &clientcmdapi.Cluster{Server: "https://localhost:8443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["vc-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	cfg.Contexts["vc"] = &clientcmdapi.Context{Cluster: "vc", AuthInfo: "vc-admin", Namespace: "default"}
	cfg.CurrentContext = "vc"
	if mutate != nil {
		mutate(cfg)
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTeamKubeconfig(t *testing.T) {
	got, err := teamKubeconfig(kubeconfigBytes(t, func(c *clientcmdapi.Config) {
		// Another context that must not leak into the team's file.
		c.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other:6443"}
		c.Contexts["other"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "vc-admin"}
	}), "https://fraud.example.com", "fraud")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(got)
	if err != nil {
		t.Fatal(err)
	}
	want := clientcmdapi.NewConfig()
	want.Clusters["fraud"] = &clientcmdapi.Cluster{Server: "https://fraud.example.com", CertificateAuthorityData: []byte("ca")}
	want.AuthInfos["fraud"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")}
	want.Contexts["fraud"] = &clientcmdapi.Context{Cluster: "fraud", AuthInfo: "fraud", Namespace: "default"}
	want.CurrentContext = "fraud"
	// LocationOfOrigin and extension maps are loader bookkeeping.
	opts := cmp.Options{
		cmp.FilterPath(func(p cmp.Path) bool {
			s := p.Last().String()
			return s == ".LocationOfOrigin" || s == ".Extensions" || s == ".Preferences"
		}, cmp.Ignore()),
	}
	if diff := cmp.Diff(want, cfg, opts); diff != "" {
		t.Errorf("team kubeconfig (-want +got):\n%s", diff)
	}
}

func TestTeamKubeconfigSoleContextWithoutCurrent(t *testing.T) {
	got, err := teamKubeconfig(kubeconfigBytes(t, func(c *clientcmdapi.Config) { c.CurrentContext = "" }), "", "fraud")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := clientcmd.Load(got)
	if s := cfg.Clusters["fraud"].Server; s != "https://localhost:8443" {
		t.Errorf("empty server must keep the exported one, got %q", s)
	}
}

func TestTeamKubeconfigMalformed(t *testing.T) {
	cases := map[string]struct {
		raw  []byte
		want string
	}{
		"not yaml": {[]byte("{nope"), "not a kubeconfig"},
		"no current context among several": {kubeconfigBytes(t, func(c *clientcmdapi.Config) {
			c.CurrentContext = ""
			c.Contexts["b"] = &clientcmdapi.Context{Cluster: "vc", AuthInfo: "vc-admin"}
		}), "no current context"},
		"missing cluster": {kubeconfigBytes(t, func(c *clientcmdapi.Config) { delete(c.Clusters, "vc") }), `names cluster "vc", which is missing`},
		"missing user":    {kubeconfigBytes(t, func(c *clientcmdapi.Config) { delete(c.AuthInfos, "vc-admin") }), `names user "vc-admin", which is missing`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := teamKubeconfig(tc.raw, "https://x.example.com", "fraud")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestKubeconfigSecretStates(t *testing.T) {
	spec := makeSpec()
	secret := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vc-fraud", Namespace: "team-fraud"}, Data: data}
	}
	cases := map[string]struct {
		objects []*corev1.Secret
		wantErr error
	}{
		"absent":      {wantErr: ErrKubeconfigNotFound},
		"no key":      {objects: []*corev1.Secret{secret(map[string][]byte{"other": []byte("x")})}, wantErr: ErrKubeconfigMalformed},
		"garbage":     {objects: []*corev1.Secret{secret(map[string][]byte{"config": []byte("{nope")})}, wantErr: ErrKubeconfigMalformed},
		"exported ok": {objects: []*corev1.Secret{secret(map[string][]byte{"config": kubeconfigBytes(t, nil)})}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := fake.NewClientset()
			for _, o := range tc.objects {
				if _, err := kube.CoreV1().Secrets(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			c := &Client{kube: kube}
			got, err := c.Kubeconfig(context.Background(), spec)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("want %v, got %v", tc.wantErr, err)
				}
				if !strings.Contains(err.Error(), "team-fraud/vc-fraud") {
					t.Errorf("error %q does not name the Secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := clientcmd.Load(got)
			if cfg.CurrentContext != "fraud" || cfg.Clusters["fraud"].Server != spec.KubeconfigServer {
				t.Errorf("got context %q server %q", cfg.CurrentContext, cfg.Clusters["fraud"].Server)
			}
		})
	}
}
