package trial

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/kind/localstack"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// DefaultWorkloadImage runs the demo pods; kind nodes pull it from Docker Hub.
const DefaultWorkloadImage = "docker.io/library/busybox:1.37"

// workloadNamespace is where the demo pods live inside each virtual cluster.
const workloadNamespace = "default"

// DemoTeam is a team the trial creates and the pods it runs in its virtual cluster.
type DemoTeam struct {
	Team *gpuvcv1.Team
	// Pods are created through the team's own kubeconfig, in namespace default of
	// its virtual cluster, asking for GPUs as a team member would: no pool, no
	// toleration, no node selector.
	Pods []*corev1.Pod
	// ClaimTemplates are created in the team's virtual cluster (namespace
	// default) before its pods: the DRA team's pods name them.
	ClaimTemplates []*resourcev1.ResourceClaimTemplate
}

// DemoTeams are the trial's two teams, one per GPU pool, each running a whole-GPU
// pod and a fractional pod; the A100 team also runs a MIG pod:
//
//	gpuvc team create vision --pool a100 --gpus 2 --mig 1g.10gb=2 --fractions
//	gpuvc team create llm    --pool h100 --gpus 2 --fractions
//
// Two whole GPUs each: one for the whole-GPU pod, one the share controller
// reserves for the fractional pod.
func DemoTeams(workloadImage string) []DemoTeam {
	return demoTeams(workloadImage, "a100", "h100")
}

// LocalDemoTeams are DemoTeams in the pool of the Docker-less trial's real node,
// system: the only node whose pods really run there (see UpLocal), and a third
// team asking for its GPU through Dynamic Resource Allocation, which only that
// node serves (the kind trial's nodes run no DRA driver):
//
//	gpuvc team create infer --pool system --gpus 1 --dra
//
// Its pod names a ResourceClaimTemplate of one gpu.nvidia.com device.
func LocalDemoTeams(workloadImage string) []DemoTeam {
	teams := demoTeams(workloadImage, localstack.RealPool, localstack.RealPool)
	return append(teams, draDemoTeam(workloadImage, localstack.RealPool))
}

// draDemoTemplate is the DRA demo team's claim template: one whole GPU.
const draDemoTemplate = "one-gpu"

func draDemoTeam(workloadImage, pool string) DemoTeam {
	if workloadImage == "" {
		workloadImage = DefaultWorkloadImage
	}
	t := team("infer", pool, 1, nil)
	t.Spec.GPUSharing = nil
	t.Spec.DRA = &gpuvcv1.DRA{}
	template := &resourcev1.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: draDemoTemplate, Namespace: workloadNamespace},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: contract.DeviceClassGPU, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
			}}},
		}}},
	}
	return DemoTeam{
		Team:           t,
		Pods:           []*corev1.Pod{demoPod("claim", workloadImage).claim("gpu", draDemoTemplate).obj()},
		ClaimTemplates: []*resourcev1.ResourceClaimTemplate{template},
	}
}

func demoTeams(workloadImage, visionPool, llmPool string) []DemoTeam {
	if workloadImage == "" {
		workloadImage = DefaultWorkloadImage
	}
	return []DemoTeam{
		{
			Team: team("vision", visionPool, 2, map[string]int32{"1g.10gb": 2}),
			Pods: []*corev1.Pod{
				demoPod("train", workloadImage).limit(contract.ResourceGPU, "1").obj(),
				demoPod("notebook", workloadImage).limit(nodepool.MIGResource("1g.10gb"), "1").obj(),
				demoPod("half", workloadImage).annotate(contract.AnnotationKAIFraction, "0.5").obj(),
			},
		},
		{
			Team: team("llm", llmPool, 2, nil),
			Pods: []*corev1.Pod{
				demoPod("train", workloadImage).limit(contract.ResourceGPU, "1").obj(),
				demoPod("half", workloadImage).annotate(contract.AnnotationKAIFraction, "0.5").obj(),
			},
		},
	}
}

func team(name, pool string, gpus int32, mig map[string]int32) *gpuvcv1.Team {
	return &gpuvcv1.Team{
		TypeMeta:   metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gpuvcv1.TeamSpec{
			Pool:       pool,
			Quota:      gpuvcv1.Quota{GPUs: &gpus, MIG: mig},
			GPUSharing: &gpuvcv1.GPUSharing{Fractions: true},
		},
	}
}

// CreateCommand is the `gpuvc team create` line that makes the same Team.
func CreateCommand(t *gpuvcv1.Team) string {
	args := []string{"gpuvc team create", t.Name, "--pool", t.Spec.Pool}
	if q := t.Spec.Quota.GPUs; q != nil {
		args = append(args, "--gpus", fmt.Sprint(*q))
	}
	profiles := make([]string, 0, len(t.Spec.Quota.MIG))
	for p := range t.Spec.Quota.MIG {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	for _, p := range profiles {
		args = append(args, "--mig", fmt.Sprintf("%s=%d", p, t.Spec.Quota.MIG[p]))
	}
	if s := t.Spec.GPUSharing; s != nil && s.Fractions {
		args = append(args, "--fractions")
	}
	if d := t.Spec.DRA; d != nil {
		args = append(args, "--dra")
		for _, c := range d.DeviceClasses {
			args = append(args, "--device-class", c)
		}
	}
	return strings.Join(args, " ")
}

// asks describes a demo pod's GPU request as its manifest states it.
func asks(p *corev1.Pod) string {
	if f, ok := p.Annotations[contract.AnnotationKAIFraction]; ok {
		return contract.AnnotationKAIFraction + ": " + f
	}
	var claims []string
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil {
			claims = append(claims, "resourceClaimTemplate: "+*c.ResourceClaimTemplateName)
		}
	}
	if len(claims) > 0 {
		return strings.Join(claims, ", ")
	}
	return gpuResources(p)
}

// gpuResources lists a pod's nvidia.com/ limits, e.g. "nvidia.com/gpu: 1".
func gpuResources(p *corev1.Pod) string {
	var out []string
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if strings.HasPrefix(string(name), "nvidia.com/") {
				out = append(out, fmt.Sprintf("%s: %s", name, q.String()))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// podBuilder builds a demo pod: one container that prints the GPUs it was given
// and sleeps.
type podBuilder struct{ corev1.Pod }

func demoPod(name, image string) *podBuilder {
	return &podBuilder{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workloadNamespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:    "main",
				Image:   image,
				Command: []string{"sh", "-c", `echo "NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES:-}"; exec sleep 86400`},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
				},
			}},
		},
	}}
}

// limit asks for an extended resource (request = limit, as Kubernetes requires).
func (b *podBuilder) limit(name, qty string) *podBuilder {
	q := resource.MustParse(qty)
	r := &b.Spec.Containers[0].Resources
	r.Limits[corev1.ResourceName(name)] = q
	r.Requests[corev1.ResourceName(name)] = q
	return b
}

// claim gives the container a DRA claim made from the namespace's template.
func (b *podBuilder) claim(name, template string) *podBuilder {
	b.Spec.ResourceClaims = append(b.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: &template})
	c := &b.Spec.Containers[0]
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
	return b
}

func (b *podBuilder) annotate(key, value string) *podBuilder {
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[key] = value
	return b
}

func (b *podBuilder) obj() *corev1.Pod { return b.Pod.DeepCopy() }
