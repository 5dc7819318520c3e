package claims_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/syncer/claims"
)

func namespace(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func claim(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string, class *string) {
	t.Helper()
	_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// conditionOf returns the claim's gpuvc condition, nil if none.
func conditionOf(ctx context.Context, cs kubernetes.Interface, ns, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimCondition, error) {
	c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	for i := range c.Status.Conditions {
		if c.Status.Conditions[i].Type == claims.ConditionType {
			return c, &c.Status.Conditions[i], nil
		}
	}
	return c, nil, nil
}

// A claim of a StorageClass that does not exist says so on its status, where
// vCluster copies it to the team's claim; a claim outside team namespaces is
// left alone.
func TestUnknownStorageClassSaysWhy(t *testing.T) {
	ctx := localcp.Context(t, 2*time.Minute)
	cs := localcp.ForTest(t).Client
	namespace(ctx, t, cs, "team-store")
	namespace(ctx, t, cs, "elsewhere")
	nope := "nope"
	claim(ctx, t, cs, "team-store", "data", &nope)
	claim(ctx, t, cs, "elsewhere", "data", &nope)
	poll.UntilSeen(ctx, t, time.Minute, "the claim's condition naming the missing class", func(ctx context.Context) (bool, string, error) {
		c, cond, err := conditionOf(ctx, cs, "team-store", "data")
		if err != nil || cond == nil {
			return false, fmt.Sprint(c.Status, err), nil
		}
		return cond.Status == corev1.ConditionTrue && cond.Reason == "ProvisioningFailed" &&
			strings.Contains(cond.Message, `storageclass.storage.k8s.io "nope" not found`) && c.Status.Phase == corev1.ClaimPending, fmt.Sprintf("%+v", cond), nil
	})
	// The other claim has its event too, but no condition.
	poll.UntilSeen(ctx, t, time.Minute, "the other claim's ProvisioningFailed event", func(ctx context.Context) (bool, string, error) {
		events, err := cs.CoreV1().Events("elsewhere").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=data,type=Warning"})
		if err != nil {
			return false, "", err
		}
		return len(events.Items) > 0, fmt.Sprint(len(events.Items), " events"), nil
	})
	_, cond, err := conditionOf(ctx, cs, "elsewhere", "data")
	require.NoError(t, err)
	require.Nil(t, cond, "a claim outside team namespaces got gpuvc's condition")
}

// A claim that waits for a volume says so, and the condition goes once a
// volume binds it.
func TestConditionGoesOnceBound(t *testing.T) {
	ctx := localcp.Context(t, 2*time.Minute)
	cs := localcp.ForTest(t).Client
	namespace(ctx, t, cs, "team-static")
	noClass := ""
	claim(ctx, t, cs, "team-static", "data", &noClass)
	poll.UntilSeen(ctx, t, time.Minute, "the claim's condition saying no volume is available", func(ctx context.Context) (bool, string, error) {
		_, cond, err := conditionOf(ctx, cs, "team-static", "data")
		if err != nil || cond == nil {
			return false, fmt.Sprint(err), nil
		}
		return cond.Reason == "FailedBinding" && strings.Contains(cond.Message, "no persistent volumes available"), fmt.Sprintf("%+v", cond), nil
	})
	_, err := cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "team-static-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:       "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/nonexistent/team-static"}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), "team-static-data", metav1.DeleteOptions{})
	})
	poll.UntilSeen(ctx, t, time.Minute, "the claim Bound without gpuvc's condition", func(ctx context.Context) (bool, string, error) {
		c, cond, err := conditionOf(ctx, cs, "team-static", "data")
		if err != nil {
			return false, "", err
		}
		return c.Status.Phase == corev1.ClaimBound && cond == nil, fmt.Sprintf("phase %s, condition %+v", c.Status.Phase, cond), nil
	})
}
