package localkueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

const admissionGate = contract.KueueAdmissionGate

var (
	flavorsGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	cqsGVR     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	lqsGVR     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	wlsGVR     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
)

func kueueObject(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

// gpuClusterQueue is a ClusterQueue with a nominal quota of gpus nvidia.com/gpu
// in flavor.
func gpuClusterQueue(name, flavor string, gpus int) *unstructured.Unstructured {
	return kueueObject("ClusterQueue", name, map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{contract.ResourceGPU},
			"flavors": []any{map[string]any{
				"name":      flavor,
				"resources": []any{map[string]any{"name": contract.ResourceGPU, "nominalQuota": fmt.Sprint(gpus)}},
			}},
		}},
	})
}

func hasGate(p *corev1.Pod, gate string) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == gate {
			return true
		}
	}
	return false
}

// TestQueuedPodIsAdmittedWithinQuotaAndWaitsBeyondIt: a plain pod labelled with
// a LocalQueue's name is gated by Kueue's webhook and ungated once its Workload
// fits the ClusterQueue's quota; a pod beyond the quota stays gated, its
// Workload saying why, until quota frees up.
func TestQueuedPodIsAdmittedWithinQuotaAndWaitsBeyondIt(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dc, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "smoke"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, testobj.Namespace(ns, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		gvr schema.GroupVersionResource
		obj *unstructured.Unstructured
	}{
		{flavorsGVR, kueueObject("ResourceFlavor", "a100", map[string]any{"nodeLabels": map[string]any{contract.LabelPool: "a100"}})},
		{cqsGVR, gpuClusterQueue("smoke", "a100", 4)},
	} {
		if _, err := dc.Resource(o.gvr).Create(ctx, o.obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", o.obj.GetKind(), err)
		}
	}
	lq := kueueObject("LocalQueue", "smoke", map[string]any{"clusterQueue": "smoke"})
	if _, err := dc.Resource(lqsGVR).Namespace(ns).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating LocalQueue: %v", err)
	}

	queued := func(name, gpus string) *corev1.Pod {
		p := testobj.Pod(name, ns).GPUs(gpus).TolerateTaint(contract.LabelPool, "a100").Label(contract.LabelKueueQueueName, "smoke").Obj()
		// The LocalQueue may not be known to Kueue's cache yet: its webhook then
		// still gates the pod, which is all this step needs.
		created, err := cp.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", name, err)
		}
		if !hasGate(created, admissionGate) {
			t.Fatalf("pod %s was created without Kueue's gate %s: %s", name, admissionGate, poll.DescribePod(created))
		}
		return created
	}

	queued("fits", "4")
	fits := poll.Pod(ctx, t, cp.Client, ns, "fits", func(p *corev1.Pod) bool {
		return !hasGate(p, admissionGate) && p.Spec.NodeName != ""
	})
	if fits.Spec.NodeSelector[contract.LabelPool] != "a100" {
		t.Errorf("admitted pod's nodeSelector %v lacks the flavor's node label %s=a100", fits.Spec.NodeSelector, contract.LabelPool)
	}

	queued("waits", "1")
	poll.UntilSeen(ctx, t, time.Minute, "the Workload of pod waits to report it does not fit the quota", func(ctx context.Context) (bool, string, error) {
		return workloadPending(ctx, dc, ns, "waits")
	})
	if p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "waits", metav1.GetOptions{}); err != nil || !hasGate(p, admissionGate) {
		t.Fatalf("pod beyond the quota lost its gate (err %v): %s", err, poll.DescribePod(p))
	}

	if err := cp.Client.CoreV1().Pods(ns).Delete(ctx, "fits", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	poll.Pod(ctx, t, cp.Client, ns, "waits", func(p *corev1.Pod) bool { return !hasGate(p, admissionGate) })
}

// workloadPending reports whether the Workload Kueue made for pod has
// QuotaReserved=False with a message (the pod waits for quota), and what it saw.
func workloadPending(ctx context.Context, dc dynamic.Interface, ns, pod string) (bool, string, error) {
	list, err := dc.Resource(wlsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, "", err
	}
	for _, wl := range list.Items {
		owners := wl.GetOwnerReferences()
		if len(owners) == 0 || owners[0].Name != pod {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "QuotaReserved" {
				return m["status"] == "False" && m["message"] != "", fmt.Sprintf("QuotaReserved=%v: %v", m["status"], m["message"]), nil
			}
		}
		return false, fmt.Sprintf("workload %s has no QuotaReserved condition yet", wl.GetName()), nil
	}
	return false, "no workload for the pod yet", nil
}
