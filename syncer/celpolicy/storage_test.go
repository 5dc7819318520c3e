package celpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

func claim(name, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: teamNS},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  volume,
		},
	}
}

// TestStorageFence: a claim the team's vCluster syncs may not name a host
// volume (a hand-made hostPath PV, another team's released one); a claim
// through a StorageClass is admitted, and gpuvc and cluster admins are not
// judged.
func TestStorageFence(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	tenant, err := claimWriter(ctx, vclusterUser(team))
	if err != nil {
		t.Fatal(err)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	refusal := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: gpuvc: %s: PersistentVolumeClaim team-fraud/steal names the host volume spec.volumeName=platform-hostpath",
		c.StorageFenceName, c.StorageFenceBindingName, c.ReasonClaimNamesVolume)
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = tenant.CoreV1().PersistentVolumeClaims(teamNS).Create(ctx, claim("steal", "platform-hostpath"), dryRun)
		return last != nil && strings.Contains(last.Error(), refusal), nil
	}); err != nil {
		t.Fatalf("a claim naming a host volume: %v; want %q", last, refusal)
	}
	if _, err := tenant.CoreV1().PersistentVolumeClaims(teamNS).Create(ctx, claim("provisioned", ""), dryRun); err != nil {
		t.Errorf("a claim through a StorageClass refused: %v", err)
	}
	if _, err := env.cp.Client.CoreV1().PersistentVolumeClaims(teamNS).Create(ctx, claim("by-admin", "platform-hostpath"), dryRun); err != nil {
		t.Errorf("a cluster admin's claim naming a volume refused: %v", err)
	}
}

// claimWriter is user with the rights on claims in the team namespace that
// vCluster's chart grants its syncer.
func claimWriter(ctx context.Context, user string) (kubernetes.Interface, error) {
	return teamWriter(ctx, user, "claims-", "", "persistentvolumeclaims")
}
