package vcsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/vcsync"
)

var fraud = vcsync.VCluster{Name: "fraud", HostNamespace: "team-fraud"}

// pooled is fraud with the settings gpuvc installs vCluster with (see
// vclusters.HelmValues): enforced pool toleration, nodes of the pool only.
var pooled = vcsync.VCluster{Name: "fraud", HostNamespace: "team-fraud", Values: map[string]any{
	"sync": map[string]any{
		"toHost":   map[string]any{"pods": map[string]any{"enforceTolerations": []string{"gpuvc.dev/pool=a100:NoSchedule"}}},
		"fromHost": map[string]any{"nodes": map[string]any{"enabled": true, "selector": map[string]any{"labels": map[string]string{contract.LabelPool: "a100"}}}},
	},
}, Nodes: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a100-0", Labels: map[string]string{contract.LabelPool: "a100"}}}}}

func gpuPod(name string, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			DNSPolicy: corev1.DNSClusterFirst,
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.invalid/train:1",
				Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits},
			}},
		},
	}
}

func gpus(name string, n int64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceName(name): *resource.NewQuantity(n, resource.DecimalSI)}
}

// The host pod's identity comes from vCluster: name, labels and annotations.
func TestTranslateIdentity(t *testing.T) {
	virtual := gpuPod("trainer", gpus(contract.ResourceGPU, 1))
	virtual.UID = types.UID("0b1c5b7e-1111-2222-3333-444455556666")
	host := vcsync.Translate(t, fraud, virtual)

	if want := vcsync.HostName(fraud, "trainer", "default"); host.Name != want || host.Namespace != "team-fraud" {
		t.Errorf("host pod %s/%s, want team-fraud/%s", host.Namespace, host.Name, want)
	}
	// The form FACTS.md describes; vCluster is the authority.
	if host.Name != "trainer-x-default-x-fraud" {
		t.Errorf("host name %s", host.Name)
	}
	wantLabels := map[string]string{"vcluster.loft.sh/managed-by": "fraud", "vcluster.loft.sh/namespace": "default", "app": "trainer"}
	for k, v := range wantLabels {
		if host.Labels[k] != v {
			t.Errorf("label %s=%q, want %q (labels %v)", k, host.Labels[k], v, host.Labels)
		}
	}
	wantAnnotations := map[string]string{
		"vcluster.loft.sh/object-name": "trainer", "vcluster.loft.sh/object-namespace": "default",
		"vcluster.loft.sh/object-uid": string(virtual.UID), "vcluster.loft.sh/object-host-name": host.Name,
	}
	for k, v := range wantAnnotations {
		if host.Annotations[k] != v {
			t.Errorf("annotation %s=%q, want %q", k, host.Annotations[k], v)
		}
	}
	if host.Spec.ServiceAccountName != "vc-workload-fraud" || host.Spec.DNSPolicy != corev1.DNSNone ||
		host.Spec.DNSConfig == nil || host.Spec.DNSConfig.Nameservers[0] != vcsync.DefaultDNSIP {
		t.Errorf("serviceAccount %q dnsPolicy %q dnsConfig %+v", host.Spec.ServiceAccountName, host.Spec.DNSPolicy, host.Spec.DNSConfig)
	}
	if diff := cmp.Diff(virtual.Spec.Containers[0].Resources, host.Spec.Containers[0].Resources); diff != "" {
		t.Errorf("GPU resources changed (-virtual +host):\n%s", diff)
	}
}

func TestTranslateLongNameIsHashed(t *testing.T) {
	name := strings.Repeat("n", 60)
	host := vcsync.Translate(t, fraud, gpuPod(name, nil))
	if len(host.Name) > 63 || host.Name != vcsync.HostName(fraud, name, "default") || host.Name == name+"-x-default-x-fraud" {
		t.Errorf("host name %q (%d characters)", host.Name, len(host.Name))
	}
}

// With the chart's defaults vCluster passes placement fields through as the
// tenant wrote them: the host side has to fence them.
func TestTranslatePassesPlacementThrough(t *testing.T) {
	virtual := gpuPod("escape", gpus(contract.ResourceGPU, 1))
	virtual.Spec.NodeSelector = map[string]string{contract.LabelPool: "h100"}
	virtual.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	virtual.Spec.SchedulerName = "my-scheduler"
	virtual.Annotations = map[string]string{"gpu-fraction": "0.5"}
	host := vcsync.Translate(t, fraud, virtual)
	if host.Spec.NodeSelector[contract.LabelPool] != "h100" || len(host.Spec.Tolerations) != 1 ||
		host.Spec.SchedulerName != "my-scheduler" || host.Annotations["gpu-fraction"] != "0.5" {
		t.Errorf("nodeSelector %v tolerations %v scheduler %q annotations %v", host.Spec.NodeSelector, host.Spec.Tolerations, host.Spec.SchedulerName, host.Annotations)
	}
}

// With gpuvc's values vCluster itself pins pods to the pool, but keeps the
// tenant's tolerations; a pod naming a node outside the pool is not synced.
func TestTranslateWithPoolValues(t *testing.T) {
	virtual := gpuPod("escape", gpus(contract.ResourceGPU, 1))
	virtual.Spec.NodeSelector = map[string]string{contract.LabelPool: "h100"}
	h100 := corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule}
	virtual.Spec.Tolerations = []corev1.Toleration{h100}
	host := vcsync.Translate(t, pooled, virtual)
	a100 := corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "a100", Effect: corev1.TaintEffectNoSchedule}
	if diff := cmp.Diff([]corev1.Toleration{h100, a100}, host.Spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	if host.Spec.NodeSelector[contract.LabelPool] != "a100" {
		t.Errorf("nodeSelector %v, want the pool's", host.Spec.NodeSelector)
	}

	named := gpuPod("pinned", nil)
	named.Spec.NodeName = "h100-0"
	res := vcsync.SyncToHost(t, pooled, named)
	if res.Err != nil || res.Created() != nil || !res.Requeue {
		t.Errorf("nodeName outside the virtual cluster: err %v, created %v, requeue %v; want no pod and a requeue", res.Err, res.Created() != nil, res.Requeue)
	}
}

// vCluster's update path sets the host's scheduling gates to the virtual pod's,
// keeps host-only tolerations and leaves nodeSelector, affinity and envFrom alone.
func TestSyncUpdatePath(t *testing.T) {
	virtual := gpuPod("notebook", gpus(contract.ResourceGPU, 1))
	created := vcsync.Translate(t, fraud, virtual)

	// What gpuvc's webhook made of it on the host.
	host := created.DeepCopy()
	host.ResourceVersion, host.UID = "42", "host-uid"
	host.Labels[contract.LabelTeam] = "fraud"
	host.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: contract.GateGPUShare}}
	host.Spec.NodeSelector = map[string]string{contract.LabelPool: "a100"}
	pool := corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "a100", Effect: corev1.TaintEffectNoSchedule}
	host.Spec.Tolerations = []corev1.Toleration{pool}
	host.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gpuvc-share-x"}}}}

	res := vcsync.Sync(t, fraud, vcsync.Event{Virtual: virtual, HostOld: created, Host: host})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	up := res.Updated()
	if up == nil {
		t.Fatal("vCluster sent no host update")
	}
	if up.ResourceVersion != "42" {
		t.Errorf("update sent with resourceVersion %q, want the one read (42)", up.ResourceVersion)
	}
	if len(up.Spec.SchedulingGates) != 0 {
		t.Errorf("gates %v: vCluster copies the virtual pod's (none)", up.Spec.SchedulingGates)
	}
	if diff := cmp.Diff(host.Spec.Tolerations, up.Spec.Tolerations); diff != "" {
		t.Errorf("tolerations (-host +update):\n%s", diff)
	}
	if diff := cmp.Diff(host.Spec.NodeSelector, up.Spec.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-host +update):\n%s", diff)
	}
	if diff := cmp.Diff(host.Spec.Containers[0].EnvFrom, up.Spec.Containers[0].EnvFrom); diff != "" {
		t.Errorf("envFrom (-host +update):\n%s", diff)
	}
	if len(res.HostWrites("resize")) != 0 {
		t.Errorf("resize writes %d for equal resources", len(res.HostWrites("resize")))
	}
	// The label gpuvc added on the host is copied into the virtual pod.
	if v := res.VirtualUpdated(); v == nil || v.Labels[contract.LabelTeam] != "fraud" {
		t.Errorf("virtual pod written back: %v", v)
	}
}

// When the host pod's container resources differ from the virtual pod's, vCluster
// (host 1.35 or later) first patches the pods/resize subresource with the
// virtual pod's resources.
func TestSyncResizesToVirtualResources(t *testing.T) {
	virtual := gpuPod("notebook", gpus("nvidia.com/mig-1g.12gb", 1))
	created := vcsync.Translate(t, fraud, virtual)
	host := created.DeepCopy()
	host.ResourceVersion = "42"
	host.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: gpus("nvidia.com/mig-2g.20gb", 1), Requests: gpus("nvidia.com/mig-2g.20gb", 1)}

	res := vcsync.Sync(t, fraud, vcsync.Event{Virtual: virtual, HostOld: created, Host: host})
	resize := res.HostWrites("resize")
	if len(resize) != 1 || len(res.Host) == 0 || res.Host[0].Subresource != "resize" {
		t.Fatalf("host writes %+v, want the resize patch first", res.Host)
	}
	var patch struct {
		Spec struct {
			Containers []corev1.Container `json:"containers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(resize[0].Patch, &patch); err != nil {
		t.Fatal(err)
	}
	if len(patch.Spec.Containers) != 1 || patch.Spec.Containers[0].Resources.Limits.Name("nvidia.com/mig-1g.12gb", resource.DecimalSI).Value() != 1 {
		t.Errorf("resize patch %s, want the virtual pod's resources", resize[0].Patch)
	}

	// Before 1.35 vCluster does not resize.
	old := fraud
	old.HostVersion = "v1.34.2"
	if res := vcsync.Sync(t, old, vcsync.Event{Virtual: virtual, HostOld: created, Host: host}); len(res.HostWrites("resize")) != 0 || res.Err != nil {
		t.Errorf("host 1.34: resize writes %d, err %v", len(res.HostWrites("resize")), res.Err)
	}
}

// Runs restore vCluster's package state: two vClusters in one test do not mix.
func TestTwoVClusters(t *testing.T) {
	ml := vcsync.VCluster{Name: "ml", HostNamespace: "team-ml"}
	a := vcsync.Translate(t, fraud, gpuPod("p", nil))
	b := vcsync.Translate(t, ml, gpuPod("p", nil))
	if a.Name == b.Name || b.Namespace != "team-ml" || b.Labels["vcluster.loft.sh/managed-by"] != "ml" {
		t.Errorf("fraud %s/%s, ml %s/%s %v", a.Namespace, a.Name, b.Namespace, b.Name, b.Labels)
	}
}

// With VCluster.Host set, vCluster's writes go there and its answers (here a
// refusal) are what vCluster sees; the cache holds what vCluster created.
func TestHostReceivesWrites(t *testing.T) {
	host := fake.NewClientBuilder().Build()
	vc := fraud
	vc.Host = host
	res := vcsync.SyncToHost(t, vc, gpuPod("trainer", nil))
	stored := &corev1.Pod{}
	if err := host.Get(context.Background(), types.NamespacedName{Namespace: "team-fraud", Name: "trainer-x-default-x-fraud"}, stored); err != nil {
		t.Fatalf("the pod did not reach the host client: %v", err)
	}
	if res.CachedHost == nil || res.CachedHost.ResourceVersion != stored.ResourceVersion {
		t.Errorf("cached host pod %v, want the created one with resourceVersion %s", res.CachedHost, stored.ResourceVersion)
	}

	refusing := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return apierrors.NewForbidden(corev1.Resource("pods"), "trainer", errors.New("denied"))
		},
	})
	vc.Host = refusing
	res = vcsync.SyncToHost(t, vc, gpuPod("trainer", nil))
	if len(res.Host) != 1 || !apierrors.IsForbidden(res.Host[0].Err) || res.Host[0].Answer != nil || !apierrors.IsForbidden(res.Err) {
		t.Errorf("writes %+v, err %v: want the refusal recorded and returned", res.Host, res.Err)
	}
}
