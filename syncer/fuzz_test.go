package syncer

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/gpuvc/gpuvc/api/contract"
)

// otherPools are pools a fuzzed pod may try to reach; the policy's pool is a100.
var otherPools = []string{"h100", "system", "", "a100 ", "A100"}

// FuzzCreateChain drives the create chain with pods built from random fields and
// checks what must hold for every pod it admits: no way onto another pool's nodes,
// no GPU device variable, the validating chain agrees, and a second run changes
// nothing. Any panic fails too. Seeds: testdata/fuzz/FuzzCreateChain.
func FuzzCreateChain(f *testing.F) {
	f.Add("1", "", "", "", "", "", "h100", uint8(0), false)
	f.Add("", "1g.10gb", "2", "0.5", "", "NVIDIA_VISIBLE_DEVICES", "", uint8(1), true)
	f.Add("2", "3g.40gb", "1", "", "20000", "", "a100", uint8(2), false)
	f.Add("0.5", "7g.80gb", "-1", "1e-3", "0", "PATH", "system", uint8(3), true)
	f.Add("1", "", "", "", "", "", "gpu-unhealthy", uint8(8), false)
	f.Fuzz(func(t *testing.T, gpus, migProfile, migCount, fraction, memory, env, tolerate string, shape uint8, privileged bool) {
		p := pod()
		if q, err := resource.ParseQuantity(gpus); err == nil && gpus != "" {
			p = p.Edit(func(pod *corev1.Pod) {
				pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{contract.ResourceGPU: q}
			})
		}
		if migProfile != "" {
			if q, err := resource.ParseQuantity(migCount); err == nil {
				p = p.Edit(func(pod *corev1.Pod) {
					if pod.Spec.Containers[0].Resources.Limits == nil {
						pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{}
					}
					pod.Spec.Containers[0].Resources.Limits[corev1.ResourceName("nvidia.com/mig-"+migProfile)] = q
				})
			}
		}
		if fraction != "" {
			p = p.GPUFraction(fraction)
		}
		if memory != "" {
			p = p.GPUMemory(memory)
		}
		if env != "" {
			p = p.Env(env, "all")
		}
		switch shape % 4 {
		case 1:
			p = p.TolerateEverything()
		case 2:
			p = p.TolerateTaint(contract.LabelPool, tolerate).NodeSelector(contract.LabelPool, tolerate)
		case 3:
			p = p.Toleration(corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpExists})
		}
		if shape&8 != 0 {
			// Taints of gpuvc's own and Kubernetes' node states, by the fuzzer's key.
			for _, key := range []string{contract.ReservedPrefix + tolerate, tolerate, corev1.TaintNodeUnschedulable} {
				p = p.Toleration(corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
			}
		}
		if privileged {
			p = p.Privileged()
		}
		in := input(p.Obj())
		r := createChain(in.Role).Run(in)
		if r.Denied() {
			return
		}
		admitted := in.Pod
		kept := []corev1.Taint{
			{Key: contract.TaintGPUUnhealthy, Value: "true", Effect: corev1.TaintEffectNoSchedule},
			{Key: contract.ReservedPrefix + tolerate, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
		}
		for _, tol := range admitted.Spec.Tolerations {
			for _, taint := range kept {
				if tol.Key != contract.LabelPool && tol.ToleratesTaint(klog.Background(), &taint, false) {
					t.Fatalf("admitted pod tolerates the taint %+v the platform keeps pods off with: %+v", taint, tol)
				}
			}
			for _, other := range otherPools {
				taint := &corev1.Taint{Key: contract.LabelPool, Value: other, Effect: corev1.TaintEffectNoSchedule}
				if tol.ToleratesTaint(klog.Background(), taint, false) {
					t.Fatalf("admitted pod tolerates pool %q's taint: %+v", other, tol)
				}
			}
		}
		if sel, ok := admitted.Spec.NodeSelector[contract.LabelPool]; ok && sel != in.Policy.Pool {
			t.Fatalf("admitted pod selects pool %q, not %q", sel, in.Policy.Pool)
		}
		for _, c := range allContainers(admitted) {
			for _, e := range c.env {
				if slices.Contains(gpuDeviceEnv, e.Name) {
					t.Fatalf("admitted pod sets %s", e.Name)
				}
			}
		}
		if v := createChain(in.Role).Verify(in); v.Denied() {
			t.Fatalf("the validating chain refuses what the mutating chain admitted: %s", v.Message())
		}
		again := input(admitted.DeepCopy())
		r2 := createChain(again.Role).Run(again)
		if r2.Denied() || len(r2.Notes) > 0 {
			t.Fatalf("a second run is not a no-op: denied=%v notes=%v", r2.Denied(), r2.Notes)
		}
		if d := cmp.Diff(admitted, again.Pod); d != "" {
			t.Fatalf("a second run changed the pod:\n%s", d)
		}
	})
}

// FuzzParseShare: share annotations never panic the parser, and an accepted
// fraction is a canonical decimal strictly between 0 and 1.
func FuzzParseShare(f *testing.F) {
	for _, s := range []string{"0.5", "1", "0", ".25", "1e-3", "NaN", "0x1p-2", "-0.5", "0.9999999999999999999", "20000"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, value string, isFraction bool) {
		p := pod()
		if isFraction {
			p = p.GPUFraction(value)
		} else {
			p = p.GPUMemory(value)
		}
		s, ok, reason, _ := parseShare(input(p.Obj()))
		if !ok {
			t.Fatalf("annotation %q not seen", value)
		}
		if reason != "" {
			return
		}
		if isFraction {
			// Float, as gpu/share reads it (a Quantity would round to nano units).
			f, err := strconv.ParseFloat(s.fraction, 64)
			if err != nil || f <= 0 || f >= 1 {
				t.Fatalf("accepted fraction %q as %q", value, s.fraction)
			}
		} else if s.memoryMiB <= 0 {
			t.Fatalf("accepted memory %q as %d MiB", value, s.memoryMiB)
		}
	})
}
