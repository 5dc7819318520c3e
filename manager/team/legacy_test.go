package team_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// createLegacyTeam stores a Team the CRD refuses today (a name with a dot, a MIG
// profile no GPU offers), as a cluster upgraded from a gpuvc without those rules
// still holds: the CRD's name and known-profile rules are lifted while the Team is
// created, then put back.
func createLegacyTeam(ctx context.Context, t *testing.T, team *gpuvcv1.Team) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(host.Config).ApiextensionsV1().CustomResourceDefinitions()
	const name = "teams.gpuvc.dev"
	orig, err := crds.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	restore := func() {
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cur, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			cur.Spec = orig.Spec
			_, err = crds.Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil, nil
		})
		require.NoError(t, err, "putting the Team CRD's rules back")
	}
	loose := orig.DeepCopy()
	schema := loose.Spec.Versions[0].Schema.OpenAPIV3Schema
	schema.XValidations = without(schema.XValidations, "self.metadata.name.matches")
	quota := schema.Properties["spec"].Properties["quota"]
	quota.XValidations = without(quota.XValidations, "p in [")
	schema.Properties["spec"].Properties["quota"] = quota
	_, err = crds.Update(ctx, loose, metav1.UpdateOptions{})
	require.NoError(t, err)
	defer restore()

	// The API server picks the new schema up shortly after the update.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, team.DeepCopy())
		if apierrors.IsInvalid(err) {
			return false, nil
		}
		return err == nil, err
	})
	require.NoError(t, err, "creating legacy team %s", team.Name)
	t.Cleanup(func() { _ = c.Delete(context.Background(), team) })
}

func without(rules apiextensionsv1.ValidationRules, substring string) apiextensionsv1.ValidationRules {
	var out apiextensionsv1.ValidationRules
	for _, r := range rules {
		if !strings.Contains(r.Rule, substring) {
			out = append(out, r)
		}
	}
	return out
}
