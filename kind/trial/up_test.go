package trial

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuvc/gpuvc/api/contract"
)

// hostPod is the pod vCluster would create on the host for virtual pod name.
func hostPod(team, name string, phase corev1.PodPhase, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-x-default-x-" + team, Namespace: "team-" + team,
			Annotations: map[string]string{vclusterNameAnnotation: name, vclusterNamespaceAnnotation: "default"},
		},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func TestFollowPodReportsWhereItLanded(t *testing.T) {
	ctx := context.Background()
	whole := hostPod("vision", "train", corev1.PodRunning, "a100-0")
	whole.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	half := hostPod("vision", "half", corev1.PodRunning, "a100-0")
	half.Annotations[contract.AnnotationGPUFraction] = "0.5"
	other := hostPod("llm", "train", corev1.PodRunning, "h100-0") // another team's namespace
	host := fake.NewClientset(whole, half, other)
	vc := fake.NewClientset()

	var got []Placement
	for _, p := range DemoTeams("")[0].Pods {
		if p.Name == "notebook" {
			continue
		}
		pl, hp, err := followPod(ctx, host, vc, "vision", p, 10*time.Second, newProgress(&bytes.Buffer{}))
		if err != nil {
			t.Fatal(err)
		}
		if hp.Namespace != "team-vision" {
			t.Errorf("host pod %s/%s", hp.Namespace, hp.Name)
		}
		got = append(got, pl)
	}
	want := []Placement{
		{Pod: "train", Asks: "nvidia.com/gpu: 1", HostPod: "team-vision/train-x-default-x-vision", Node: "a100-0", HostGPU: "nvidia.com/gpu: 1"},
		{Pod: "half", Asks: "gpu-fraction: 0.5", HostPod: "team-vision/half-x-default-x-vision", Node: "a100-0", HostGPU: "0.5 of a GPU the team reserved"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}
}

// A pod gpuvc's webhook refuses never reaches the host; vCluster records the
// refusal on the virtual pod, and the trial stops with it instead of waiting.
func TestFollowPodStopsAtARefusal(t *testing.T) {
	vc := fake.NewClientset(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "notebook.1", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "notebook", Namespace: "default"},
		Type:           corev1.EventTypeWarning, Reason: "SyncError",
		Message: `admission webhook "pods.gpuvc.dev" denied the request: nvidia.com/mig-1g.10gb=1 is over the team's quota`,
	})
	pod := DemoTeams("")[0].Pods[1]
	var log bytes.Buffer
	start := time.Now()
	_, _, err := followPod(context.Background(), fake.NewClientset(), vc, "vision", pod, time.Minute, newProgress(&log))
	if err == nil || !strings.Contains(err.Error(), "refused on the host: SyncError: admission webhook") {
		t.Fatalf("err = %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v: a refusal must end the wait", time.Since(start))
	}
}

func TestResultPrintSaysWhereAndHowToConnect(t *testing.T) {
	r := &Result{
		WorkloadImage: DefaultWorkloadImage,
		Cluster:       &Cluster{Name: "gpuvc-trial", Kubeconfig: "/home/u/.cache/gpuvc/trial/gpuvc-trial.kubeconfig"},
		Nodes:         []NodeGPUs{{Pool: "a100", Node: "a100-0", GPUs: "nvidia.com/gpu: 4, nvidia.com/mig-1g.10gb: 8"}},
		Teams: []TeamResult{{
			Name: "vision", Pool: "a100", Command: CreateCommand(DemoTeams("")[0].Team),
			Kubeconfig: "/home/u/.cache/gpuvc/trial/vision.kubeconfig", Server: "https://172.18.0.3:31443",
			Pods: []Placement{{Pod: "notebook", Asks: "nvidia.com/mig-1g.10gb: 1", HostPod: "team-vision/notebook-x-default-x-vision",
				Node: "a100-0", HostGPU: "nvidia.com/mig-1g.10gb: 1", Devices: "MIG-sim-1"}},
		}},
	}
	var out bytes.Buffer
	r.Print(&out, "bin/gpuvc")
	local := *r
	local.Cluster = &Cluster{Kubeconfig: "/k", Local: true, Kubectl: "/cache/bin/kubernetes-x/kubectl"}
	var localOut bytes.Buffer
	local.Print(&localOut, "bin/gpuvc")
	if !strings.Contains(localOut.String(), "/cache/bin/kubernetes-x/kubectl --kubeconfig /home/u/.cache/gpuvc/trial/vision.kubeconfig get pods") {
		t.Errorf("the local trial's report does not name the kubectl built with the binaries:\n%s", localOut.String())
	}
	for _, want := range []string{
		"a100-0  a100  nvidia.com/gpu: 4, nvidia.com/mig-1g.10gb: 8",
		"vision  notebook     nvidia.com/mig-1g.10gb: 1  team-vision/notebook-x-default-x-vision  a100-0",
		"export KUBECONFIG=/home/u/.cache/gpuvc/trial/gpuvc-trial.kubeconfig",
		"bin/gpuvc team kubeconfig vision -f vision.kubeconfig",
		"kubectl --kubeconfig /home/u/.cache/gpuvc/trial/vision.kubeconfig get pods",
		"https://172.18.0.3:31443",
		"kubectl --kubeconfig /home/u/.cache/gpuvc/trial/vision.kubeconfig exec train -- timeout 5 wget -q -O- http://web/",
		"run web --image=docker.io/library/busybox:1.37",
		"make trial-down",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// node is a registered, Ready node advertising what its kubelet would.
func node(name, ip string, allocatable map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		Addresses:   []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
	}}
	for k, v := range allocatable {
		if strings.HasPrefix(k, "nvidia.com/") {
			n.Status.Allocatable[corev1.ResourceName(k)] = resource.MustParse(v)
		}
	}
	return n
}

func TestWaitForTheNodesAndTheirSimulatedGPUs(t *testing.T) {
	var nodes []runtime.Object
	for i, p := range Pools() {
		for _, n := range p.Nodes {
			nodes = append(nodes, node(n.Name, fmt.Sprintf("172.18.0.%d", 3+i), n.Capacity()))
		}
	}
	var log bytes.Buffer
	s := &session{opts: Options{Pools: Pools(), Timeout: 5 * time.Second}, log: newProgress(&log),
		cluster: &Cluster{Name: "t", Client: fake.NewClientset(nodes...), Created: true}}
	if err := s.waitNodes(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.cluster.SystemNodeIP != "172.18.0.3" {
		t.Errorf("system node address %q, want system-0's InternalIP", s.cluster.SystemNodeIP)
	}
	if err := s.waitGPUs(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []NodeGPUs{
		{Pool: "system", Node: "system-0", GPUs: "nvidia.com/gpu: 2, nvidia.com/mig-1g.10gb: 4, nvidia.com/mig-2g.20gb: 2, nvidia.com/mig-3g.40gb: 2"},
		{Pool: "a100", Node: "a100-0", GPUs: "nvidia.com/gpu: 4, nvidia.com/mig-1g.10gb: 8, nvidia.com/mig-2g.20gb: 4, nvidia.com/mig-3g.40gb: 4"},
		{Pool: "h100", Node: "h100-0", GPUs: "nvidia.com/gpu: 8"},
	}
	if diff := cmp.Diff(want, s.cluster.GPUs); diff != "" {
		t.Errorf("GPUs (-want +got):\n%s", diff)
	}

	// A node whose device plugin has not registered is named.
	s.cluster.Client = fake.NewClientset(node("system-0", "172.18.0.3", nil))
	s.opts.Timeout = time.Second
	if err := s.waitGPUs(context.Background()); err == nil || !strings.Contains(err.Error(), "node system-0 advertises [], not the simulated") {
		t.Errorf("err = %v", err)
	}
}

// A reused cluster without the pools' nodes is refused at once.
func TestAReusedClusterMustBeATrialCluster(t *testing.T) {
	s := &session{opts: Options{Pools: Pools(), Timeout: time.Minute}, log: newProgress(&bytes.Buffer{}),
		cluster: &Cluster{Name: "other", Client: fake.NewClientset(node("other-worker", "172.18.0.9", nil))}}
	start := time.Now()
	err := s.waitNodes(context.Background())
	if err == nil || !strings.Contains(err.Error(), "kind cluster other has no node system-0: it is not a gpuvc trial cluster") {
		t.Errorf("err = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}
