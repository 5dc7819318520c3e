package teamclaims_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// The tests run the sync between two real API servers: the package's control
// plane is the host, with gpuvc's CEL fence installed (no webhook: what the
// host refuses, the policies refused), and a second API server stands in for
// the team's virtual cluster.

const (
	// fencedNS is a team namespace as the manager lays it out for the fence.
	fencedNS   = "team-ml"
	fencedTeam = "ml"
	// otherClass is a host DeviceClass no team here may use.
	otherClass = "other.example.com"
)

var env struct {
	host, virtual *localcluster.ControlPlane
}

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{APIOnly: true}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		env.host = cp
		virtual, err := localcp.Start(ctx, localcluster.Options{APIOnly: true})
		if err != nil {
			return nil, fmt.Errorf("starting the stand-in virtual cluster: %w", err)
		}
		env.virtual = virtual
		stop := func() { _ = virtual.Stop() }
		if err := setUp(ctx); err != nil {
			stop()
			return nil, err
		}
		return stop, nil
	}))
}

func setUp(ctx context.Context) error {
	c := env.host.Client
	if err := charts.InstallCRDs(ctx, env.host.Config); err != nil {
		return err
	}
	if err := celpolicy.Install(ctx, c, celpolicy.Options{}); err != nil {
		return err
	}
	for _, dc := range append(dra.DeviceClasses(), &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: otherClass}}) {
		if _, err := c.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	// Labelled for admin access, which the API server would refuse by itself
	// otherwise: the refusal seen is gpuvc's.
	if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(fencedNS, map[string]string{
		contract.LabelTeam: fencedTeam, contract.LabelPool: "a100", resourcev1.DRAAdminNamespaceLabelKey: "true",
	}), metav1.CreateOptions{}); err != nil {
		return err
	}
	params := celpolicy.PolicyParams(&syncer.TeamPolicy{Team: fencedTeam, MaxGPUsPerPod: 2, DRA: true, AllowedDeviceClasses: []string{contract.DeviceClassGPU}, VClusterName: fencedTeam})
	if _, err := c.CoreV1().ConfigMaps(fencedNS).Apply(ctx, celpolicy.TeamParams(fencedNS, params), metav1.ApplyOptions{FieldManager: celpolicy.FieldManager, Force: true}); err != nil {
		return err
	}
	return waitForClaimFence(ctx)
}

// waitForClaimFence polls with dry-run creates until the API server judges
// claims in the team namespace (it loads policies, bindings and parameters
// asynchronously): a claim of every device is refused, a claim of one GPU
// admitted.
func waitForClaimFence(ctx context.Context) error {
	api := env.host.Client.ResourceV1().ResourceClaims(fencedNS)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, errBad := api.Create(ctx, testobj.ClaimSpec().AllDevices("all", contract.DeviceClassGPU).Claim("probe-bad", fencedNS), dryRun)
		_, errGood := api.Create(ctx, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("probe-good", fencedNS), dryRun)
		last = fmt.Sprintf("bad: %v; good: %v", errBad, errGood)
		return errBad != nil && strings.Contains(errBad.Error(), celpolicy.ReasonDeviceAllocationAll) && errGood == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the claim fence never took effect in %s: %w (last: %s)", fencedNS, err, last)
	}
	return nil
}

// hostNamespace creates a host namespace outside the fence (no team label) with
// the ServiceAccount pods need (no controller manager runs here to make it).
func hostNamespace(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	c := env.host.Client
	if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(name, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// virtualNamespace creates a namespace in the stand-in virtual cluster (a
// tenant may label it for admin access there); its claims and templates are
// removed at the test's end (no namespace controller runs here), so the next
// test's sync does not see them.
func virtualNamespace(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	c := env.virtual.Client
	if _, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(name, map[string]string{resourcev1.DRAAdminNamespaceLabelKey: "true"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = c.ResourceV1().ResourceClaims(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = c.ResourceV1().ResourceClaimTemplates(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	return name
}
