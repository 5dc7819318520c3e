package localkueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Kueue runs under its own identity, as Kueue's manifests install it: the
// ServiceAccount kueue-controller-manager in its namespace, bound to Kueue's own
// ClusterRole (config/components/rbac/role.yaml, named kueue-manager-role as
// Kueue's kustomization names it) and Role on the Secrets of its namespace
// (manager_secrets_role.yaml). gpuvc's webhook lets only that user lift
// Kueue's admission gate, so Kueue must not run as the cluster admin the tests
// use to play the team.

const (
	// ServiceAccount is the ServiceAccount Kueue runs as, in its namespace.
	ServiceAccount = "kueue-controller-manager"
	clusterRole    = "kueue-manager-role"
	secretsRole    = "kueue-manager-secrets-role"
	// tokenLifetime covers a developer's cluster that runs for months (gpuvc
	// dev cluster up): the token is written once, when Kueue starts.
	tokenLifetime = 365 * 24 * 3600
)

// User is the user Kueue authenticates as in namespace.
func User(namespace string) string {
	return "system:serviceaccount:" + namespace + ":" + ServiceAccount
}

// ensureIdentity creates Kueue's ServiceAccount and its binding to Kueue's
// ClusterRole, and writes a kubeconfig for that ServiceAccount into dir.
func ensureIdentity(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config, configDir, namespace, dir string) (string, error) {
	role, err := kueueClusterRole(configDir)
	if err != nil {
		return "", err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Namespace: namespace}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if err := createOrUpdateClusterRole(ctx, cs, role); err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusterRole + "binding"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount, Namespace: namespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if err := ensureSecretsRole(ctx, cs, namespace); err != nil {
		return "", err
	}
	lifetime := int64(tokenLifetime)
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, ServiceAccount, &authv1.TokenRequest{
		Spec: authv1.TokenRequestSpec{ExpirationSeconds: &lifetime},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token of Kueue's ServiceAccount %s/%s: %w", namespace, ServiceAccount, err)
	}
	return writeTokenKubeconfig(cfg, tok.Status.Token, filepath.Join(dir, "kueue.kubeconfig"))
}

// ensureSecretsRole lets Kueue read and update the Secrets of its namespace,
// as Kueue's manager_secrets_role.yaml does: it watches them even with
// certificates provided.
func ensureSecretsRole(ctx context.Context, cs kubernetes.Interface, namespace string) error {
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: secretsRole, Namespace: namespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "update", "watch"}}},
	}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: secretsRole + "binding", Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: secretsRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccount, Namespace: namespace}},
	}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// kueueClusterRole reads Kueue's own ClusterRole from its module.
func kueueClusterRole(configDir string) (*rbacv1.ClusterRole, error) {
	path := filepath.Join(configDir, "rbac", "role.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Kueue's ClusterRole (its module's config/components/rbac/role.yaml): %w", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(b, role); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	role.Name = clusterRole
	return role, nil
}

func createOrUpdateClusterRole(ctx context.Context, cs kubernetes.Interface, role *rbacv1.ClusterRole) error {
	have, err := cs.RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	have.Rules = role.Rules
	_, err = cs.RbacV1().ClusterRoles().Update(ctx, have, metav1.UpdateOptions{})
	return err
}

// writeTokenKubeconfig writes a kubeconfig for cfg's API server that
// authenticates with token.
func writeTokenKubeconfig(cfg *rest.Config, token, path string) (string, error) {
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return "", err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[ServiceAccount] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: ServiceAccount}
	kc.CurrentContext = "local"
	return path, clientcmd.WriteToFile(*kc, path)
}
