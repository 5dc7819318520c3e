package teamqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// kueueObject reads a Kueue object ("" namespace for cluster-scoped kinds).
func kueueObject(ctx context.Context, kind, ns, name string) (*unstructured.Unstructured, error) {
	plural := map[string]string{"ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "ResourceFlavor": "resourceflavors"}[kind]
	r := dc.Resource(teamqueue.GroupVersion.WithResource(plural))
	if ns != "" {
		return r.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	}
	return r.Get(ctx, name, metav1.GetOptions{})
}

// condition returns a Kueue object's status condition of type typ ("" if none).
func condition(u *unstructured.Unstructured, typ string) (status, msg string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["message"])
		}
	}
	return "", ""
}

func createTeam(ctx context.Context, t testing.TB, team *gpuvcv1.Team) {
	t.Helper()
	if err := c.Create(ctx, team); err != nil {
		t.Fatalf("creating team %s: %v", team.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), team) })
}

func quotaHardGPUs(ctx context.Context, teamName string) (string, error) {
	q := &corev1.ResourceQuota{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: gpuvcv1.HostNamespace(teamName), Name: team.QuotaName}, q); err != nil {
		return "", err
	}
	v := q.Spec.Hard["requests."+contract.ResourceGPU]
	return v.String(), nil
}

// TestQueueingTeamGetsKueueObjectsThatKueueAccepts: a Team with spec.queueing
// gets a ClusterQueue that Kueue reports Active (its flavors exist, its quotas
// are valid), a LocalQueue in its namespace, and a ResourceQuota holding the
// burst ceiling; edits by hand are repaired; dropping spec.queueing removes the
// queues and brings the quota back to spec.quota.
func TestQueueingTeamGetsKueueObjectsThatKueueAccepts(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("vision", "a100").GPUs(4).Borrow(4).Lend(2).MIG("1g.10gb", 2).Obj())
	cqName := teamqueue.ClusterQueueName("vision")

	poll.UntilSeen(ctx, t, time.Minute, "ClusterQueue "+cqName+" Active", func(ctx context.Context) (bool, string, error) {
		cq, err := kueueObject(ctx, "ClusterQueue", "", cqName)
		if err != nil {
			return false, "", err
		}
		st, msg := condition(cq, "Active")
		return st == "True", "Active=" + st + ": " + msg, nil
	})
	poll.UntilSeen(ctx, t, time.Minute, "LocalQueue gpuvc in team-vision Active", func(ctx context.Context) (bool, string, error) {
		lq, err := kueueObject(ctx, "LocalQueue", "team-vision", contract.KueueLocalQueueName)
		if err != nil {
			return false, "", err
		}
		st, msg := condition(lq, "Active")
		return st == "True", "Active=" + st + ": " + msg, nil
	})
	poll.UntilSeen(ctx, t, time.Minute, "ResourceQuota of the ceiling 4 guaranteed + 4 borrowable, plus as much waiting (default queue depth): 16 GPUs", func(ctx context.Context) (bool, string, error) {
		got, err := quotaHardGPUs(ctx, "vision")
		return got == "16", "requests.nvidia.com/gpu=" + got, err
	})

	// Drift: a hand-edited weight and a deleted LocalQueue come back.
	cqs := dc.Resource(teamqueue.GroupVersion.WithResource("clusterqueues"))
	if _, err := cqs.Patch(ctx, cqName, types.MergePatchType, []byte(`{"spec":{"fairSharing":{"weight":"7"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	lqs := dc.Resource(teamqueue.GroupVersion.WithResource("localqueues")).Namespace("team-vision")
	if err := lqs.Delete(ctx, contract.KueueLocalQueueName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.UntilSeen(ctx, t, time.Minute, "the hand-edited weight repaired to 1", func(ctx context.Context) (bool, string, error) {
		cq, err := kueueObject(ctx, "ClusterQueue", "", cqName)
		if err != nil {
			return false, "", err
		}
		w, _, _ := unstructured.NestedString(cq.Object, "spec", "fairSharing", "weight")
		return w == "1", "weight " + w, nil
	})
	poll.Until(ctx, t, time.Minute, "the deleted LocalQueue recreated", func(ctx context.Context) (bool, error) {
		_, err := lqs.Get(ctx, contract.KueueLocalQueueName, metav1.GetOptions{})
		return err == nil, client.IgnoreNotFound(err)
	})

	// Stop queueing: the queues go, the quota is spec.quota again.
	// The manager writes the Team's status meanwhile: retry on conflicts.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		tm := &gpuvcv1.Team{}
		if err := c.Get(ctx, types.NamespacedName{Name: "vision"}, tm); err != nil {
			return err
		}
		tm.Spec.Queueing = nil
		return c.Update(ctx, tm)
	}); err != nil {
		t.Fatal(err)
	}
	poll.Until(ctx, t, time.Minute, "ClusterQueue and LocalQueue removed", func(ctx context.Context) (bool, error) {
		_, cqErr := kueueObject(ctx, "ClusterQueue", "", cqName)
		_, lqErr := lqs.Get(ctx, contract.KueueLocalQueueName, metav1.GetOptions{})
		return apierrors.IsNotFound(cqErr) && apierrors.IsNotFound(lqErr), nil
	})
	poll.UntilSeen(ctx, t, time.Minute, "ResourceQuota back to spec.quota.gpus 4", func(ctx context.Context) (bool, string, error) {
		got, err := quotaHardGPUs(ctx, "vision")
		return got == "4", "requests.nvidia.com/gpu=" + got, err
	})
}
