package syncer

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

// The families of issue 22 (docs/syncer.md, "Tenant escapes by family"): one
// row per member, judged by the whole create chain as the webhook runs it.

func seconds(s int64) *int64 { return &s }

// TestTolerationFamily: every taint a tenant could tolerate, and whether the
// toleration survives the create chain (kept) or is removed (TolerationRemoved).
func TestTolerationFamily(t *testing.T) {
	gpuTaint := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	cases := map[string]struct {
		tol     corev1.Toleration
		allowed []corev1.Toleration
		kept    bool
	}{
		"the team's pool (Equal)":  {tol: poolToleration("a100"), kept: true},
		"another pool":             {tol: poolToleration("h100")},
		"pool key with Exists":     {tol: corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpExists}},
		"wildcard (empty key)":     {tol: corev1.Toleration{Operator: corev1.TolerationOpExists}},
		"wildcard NoExecute only":  {tol: corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		"gpuvc GPU health taint":   {tol: corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		"gpuvc health, Equal true": {tol: corev1.Toleration{Key: contract.TaintGPUUnhealthy, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		"gpuvc runtime taint":      {tol: corev1.Toleration{Key: "gpuvc.dev/unsafe-runtime", Operator: corev1.TolerationOpExists}},
		"any other gpuvc.dev/ key": {tol: corev1.Toleration{Key: "gpuvc.dev/anything", Operator: corev1.TolerationOpExists}},
		"gpuvc key listed by the team (still removed)": {tol: corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists},
			allowed: []corev1.Toleration{{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists}}},
		"cordoned (unschedulable)": {tol: corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		"not-ready 300 s (Kubernetes default)": {tol: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}, kept: true},
		"unreachable 300 s (Kubernetes default)": {tol: corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}, kept: true},
		"unreachable 0 s":                                {tol: corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(0)}, kept: true},
		"not-ready 301 s":                                {tol: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(301)}},
		"not-ready forever":                              {tol: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		"not-ready NoSchedule":                           {tol: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		"not-ready every effect":                         {tol: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, TolerationSeconds: seconds(60)}},
		"other node.kubernetes.io taint (disk-pressure)": {tol: corev1.Toleration{Key: "node.kubernetes.io/disk-pressure", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		"other key (nvidia.com/gpu)":                     {tol: gpuTaint},
		"other key the team allows":                      {tol: gpuTaint, allowed: []corev1.Toleration{gpuTaint}, kept: true},
		"other key, another effect than allowed": {tol: corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists},
			allowed: []corev1.Toleration{gpuTaint}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input(pod().GPUs("1").Toleration(tc.tol).Obj())
			in.Policy.AllowedTolerations = tc.allowed
			r := workloadCreate.Run(in)
			if r.Denied() {
				t.Fatalf("refused: %s", r.Message())
			}
			kept := slices.ContainsFunc(in.Pod.Spec.Tolerations, func(k corev1.Toleration) bool {
				return sameToleration(k, tc.tol) && ptr.Equal(k.TolerationSeconds, tc.tol.TolerationSeconds)
			})
			if kept != tc.kept {
				t.Fatalf("kept=%v, want %v (tolerations %v, notes %v)", kept, tc.kept, in.Pod.Spec.Tolerations, r.Notes)
			}
			removed := slices.ContainsFunc(r.Notes, func(n Note) bool {
				return n.Reason == ReasonTolerationRemoved && contains(n.Message, "spec.tolerations") &&
					contains(n.Message, describeToleration(tc.tol)) && contains(n.Message, "allowedTolerations")
			})
			if removed == tc.kept {
				t.Fatalf("TolerationRemoved note naming the toleration = %v, want %v: %v", removed, !tc.kept, r.Notes)
			}
			if v := workloadCreate.Verify(in); v.Denied() {
				t.Fatalf("the admitted pod is not a fixed point: %s", v.Message())
			}
		})
	}
}

// TestTolerationFamilyOnUpdate: an UPDATE (vCluster re-sending the tenant's
// tolerations) may not add one outside the family; kept ones stay.
func TestTolerationFamilyOnUpdate(t *testing.T) {
	old := pod().InPool("a100").Obj()
	for name, tc := range map[string]struct {
		tol  corev1.Toleration
		kept bool
	}{
		"health taint added":      {tol: corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists}},
		"unschedulable added":     {tol: corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}},
		"not-ready 300 s added":   {tol: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}, kept: true},
		"not-ready forever added": {tol: corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(pod().InPool("a100").Toleration(tc.tol).Obj())
			in.Old = old
			r := podUpdate.Run(in)
			kept := slices.ContainsFunc(in.Pod.Spec.Tolerations, func(k corev1.Toleration) bool { return sameToleration(k, tc.tol) })
			if kept != tc.kept || r.Denied() {
				t.Fatalf("kept=%v want %v; %v %v", kept, tc.kept, r.Notes, r.Denials)
			}
		})
	}
}

// TestIdentityFamily: every ServiceAccount of a team namespace, as a workload
// and as the control plane.
func TestIdentityFamily(t *testing.T) {
	withSA := func(sa string) *corev1.Pod { p := pod().Obj(); p.Spec.ServiceAccountName = sa; return p }
	runCheckTable(t, checkReservedServiceAccount, map[string]checkCase{
		"unset (default)":                          {pod: pod().Obj()},
		"default":                                  {pod: withSA("default")},
		"vCluster's workload account":              {pod: withSA("vc-workload-fraud")},
		"a tenant's own (synced) account":          {pod: withSA("my-app")},
		"another team's control plane name":        {pod: withSA("vc-other")},
		"gpuvc-reserve by gpuvc (trusted)":         {pod: withSA(contract.ReserveServiceAccount), edit: func(in *Input) { in.Trusted = true }},
		"control plane account, the control plane": {pod: withSA("vc-fraud"), edit: func(in *Input) { in.Role = contract.RoleControlPlane }},
		"gpuvc-reserve by a tenant": {pod: withSA(contract.ReserveServiceAccount), reason: ReasonReservedServiceAccount,
			says: []string{"spec.serviceAccountName=gpuvc-reserve", "limit", "remove"}},
		"control plane account by a workload": {pod: withSA("vc-fraud"), reason: ReasonReservedServiceAccount,
			says: []string{"spec.serviceAccountName=vc-fraud", "control plane", "limit: workload pods run as vc-workload-fraud or default", "remove"}},
	})
}

// TestKueueLabelFamily: the Kueue labels gpuvc decides on CREATE.
func TestKueueLabelFamily(t *testing.T) {
	queueing := func(in *Input) {
		in.Policy.KueueQueue = contract.KueueLocalQueueName
		in.Policy.AllowedKueuePriorityClasses = []string{"team-batch"}
	}
	for name, tc := range map[string]struct {
		pod      *corev1.Pod
		edit     func(*Input)
		want     map[string]string // kueue labels after the chain; absent = removed
		wantNote string
	}{
		"queue name set on a GPU pod": {pod: pod().GPUs("1").Obj(), edit: queueing,
			want: map[string]string{contract.LabelKueueQueueName: "gpuvc"}},
		"foreign queue name replaced": {pod: pod().GPUs("1").Label(contract.LabelKueueQueueName, "other").Obj(), edit: queueing,
			want: map[string]string{contract.LabelKueueQueueName: "gpuvc"}, wantNote: ReasonKueueQueueSet},
		"allowed priority class kept": {pod: pod().GPUs("1").Label(contract.LabelKueuePriorityClass, "team-batch").Obj(), edit: queueing,
			want: map[string]string{contract.LabelKueueQueueName: "gpuvc", contract.LabelKueuePriorityClass: "team-batch"}},
		"higher priority class removed": {pod: pod().GPUs("1").Label(contract.LabelKueuePriorityClass, "cluster-critical").Obj(), edit: queueing,
			want: map[string]string{contract.LabelKueueQueueName: "gpuvc"}, wantNote: ReasonKueuePriorityRemoved},
		"priority class on a pod that does not queue removed": {pod: pod().Label(contract.LabelKueuePriorityClass, "team-batch").Obj(), edit: queueing,
			want: map[string]string{}, wantNote: ReasonKueuePriorityRemoved},
		"priority class of a team that does not queue removed": {pod: pod().GPUs("1").Label(contract.LabelKueuePriorityClass, "team-batch").Obj(),
			want: map[string]string{}, wantNote: ReasonKueuePriorityRemoved},
		"prebuilt workload removed": {pod: pod().GPUs("1").Label(contract.LabelKueuePrebuiltWorkload, "victim").Obj(), edit: queueing,
			want: map[string]string{contract.LabelKueueQueueName: "gpuvc"}, wantNote: ReasonKueuePriorityRemoved},
		"pod group kept (the tenant's own gang, in its own queue)": {pod: pod().GPUs("1").Label("kueue.x-k8s.io/pod-group-name", "g").
			Annotation("kueue.x-k8s.io/pod-group-total-count", "2").Obj(), edit: queueing,
			want: map[string]string{contract.LabelKueueQueueName: "gpuvc", "kueue.x-k8s.io/pod-group-name": "g"}},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			if tc.edit != nil {
				tc.edit(in)
			}
			r := workloadCreate.Run(in)
			if r.Denied() {
				t.Fatalf("refused: %s", r.Message())
			}
			got := map[string]string{}
			for k, v := range in.Pod.Labels {
				if len(k) > len(contract.KueueGroup) && k[:len(contract.KueueGroup)] == contract.KueueGroup {
					got[k] = v
				}
			}
			if !mapsEqual(got, tc.want) {
				t.Fatalf("kueue labels %v, want %v", got, tc.want)
			}
			if tc.wantNote != "" && !slices.Contains(reasonsOf(r.Notes), tc.wantNote) {
				t.Fatalf("notes %v lack %s", reasonsOf(r.Notes), tc.wantNote)
			}
			if v := workloadCreate.Verify(in); v.Denied() {
				t.Fatalf("not a fixed point: %s", v.Message())
			}
		})
	}
}

// TestKueueLabelsRestoredOnUpdate: the priority class cannot be added or
// changed after creation.
func TestKueueLabelsRestoredOnUpdate(t *testing.T) {
	old := pod().InPool("a100").Label(contract.LabelKueueQueueName, "gpuvc").Obj()
	in := input(pod().InPool("a100").Label(contract.LabelKueueQueueName, "gpuvc").Label(contract.LabelKueuePriorityClass, "cluster-critical").Obj())
	in.Old = old
	r := podUpdate.Run(in)
	if _, ok := in.Pod.Labels[contract.LabelKueuePriorityClass]; ok || !slices.Contains(reasonsOf(r.Notes), ReasonKueueQueueSet) {
		t.Fatalf("priority class added by update kept: %v %v", in.Pod.Labels, r.Notes)
	}
}

// TestGateFamily: gpuvc's gates on pods gpuvc does not hold with them.
func TestGateFamily(t *testing.T) {
	queueing := func(in *Input) { in.Policy.KueueQueue = contract.KueueLocalQueueName }
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		edit func(*Input)
		want []string // gates after the chain
		note bool     // SchedulingGateRemoved
	}{
		"tenant's own gate kept":                             {pod: pod().SchedulingGate("example.com/wait").Obj(), want: []string{"example.com/wait"}},
		"share gate without a share removed":                 {pod: pod().SchedulingGate(contract.GateGPUShare).Obj(), note: true},
		"share gate on a share pod kept (one)":               {pod: pod().GPUFraction("0.5").SchedulingGate(contract.GateGPUShare).Obj(), want: []string{contract.GateGPUShare}},
		"share gate with an invalid share refused first":     {pod: pod().GPUs("1").SchedulingGate(contract.GateGPUShare).Obj(), note: true},
		"Kueue gate on a team that does not queue removed":   {pod: pod().GPUs("1").SchedulingGate(contract.KueueAdmissionGate).Obj(), note: true},
		"Kueue gate on a CPU pod of a queueing team removed": {pod: pod().SchedulingGate(contract.KueueAdmissionGate).Obj(), edit: queueing, note: true},
		"Kueue gate on a queued GPU pod kept (one)": {pod: pod().GPUs("1").SchedulingGate(contract.KueueAdmissionGate).Obj(), edit: queueing,
			want: []string{contract.KueueAdmissionGate}},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			if tc.edit != nil {
				tc.edit(in)
			}
			r := workloadCreate.Run(in)
			if r.Denied() {
				t.Fatalf("refused: %s", r.Message())
			}
			var got []string
			for _, g := range in.Pod.Spec.SchedulingGates {
				got = append(got, g.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("gates %v, want %v", got, tc.want)
			}
			noted := slices.ContainsFunc(r.Notes, func(n Note) bool {
				return n.Reason == ReasonGateRemoved && contains(n.Message, "spec.schedulingGates") && contains(n.Message, "limit")
			})
			if noted != tc.note {
				t.Fatalf("SchedulingGateRemoved=%v, want %v: %v", noted, tc.note, r.Notes)
			}
			if v := workloadCreate.Verify(in); v.Denied() {
				t.Fatalf("not a fixed point: %s", v.Message())
			}
		})
	}
}

// TestEnvSourceFamily: every way a container gets an environment variable.
func TestEnvSourceFamily(t *testing.T) {
	envFrom := func(e corev1.EnvFromSource) *corev1.Pod {
		p := pod().Obj()
		p.Spec.Containers[0].EnvFrom = append(p.Spec.Containers[0].EnvFrom, e)
		return p
	}
	cm := func(name, prefix string) corev1.EnvFromSource {
		return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
	}
	sec := func(name string) corev1.EnvFromSource {
		return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
	}
	valueFrom := func(name string, src corev1.EnvVarSource) *corev1.Pod {
		p := pod().Obj()
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: name, ValueFrom: &src})
		return p
	}
	keys := map[string][]string{
		"configMap/devices":       {"NVIDIA_VISIBLE_DEVICES", "OTHER"},
		"configMap/suffix":        {"VISIBLE_DEVICES"},
		"configMap/plain":         {"OTHER"},
		"secret/devices":          {"NVIDIA_MIG_CONFIG_DEVICES"},
		"configMap/gpuvc-share-p": {"NVIDIA_VISIBLE_DEVICES"},
	}
	withKeys := func(in *Input) { in.EnvSourceKeys = keys }
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		reason string
		says   []string
	}{
		"env value":                                   {pod: pod().Env("NVIDIA_VISIBLE_DEVICES", "all").Obj(), reason: ReasonGPUEnv},
		"env valueFrom configMapKeyRef":               {pod: valueFrom("NVIDIA_VISIBLE_DEVICES", corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "plain"}, Key: "OTHER"}}), reason: ReasonGPUEnv},
		"env valueFrom secretKeyRef":                  {pod: valueFrom("NVIDIA_MIG_MONITOR_DEVICES", corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "devices"}, Key: "x"}}), reason: ReasonGPUEnv},
		"env valueFrom fieldRef":                      {pod: valueFrom("NVIDIA_VISIBLE_DEVICES", corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}), reason: ReasonGPUEnv},
		"valueFrom of a device key into another name": {pod: valueFrom("SAFE", corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "devices"}, Key: "NVIDIA_VISIBLE_DEVICES"}})},
		"envFrom ConfigMap with the key": {pod: envFrom(cm("devices", "")), reason: ReasonGPUEnvFrom,
			says: []string{"spec.containers[0].envFrom[0].configMapRef.name=devices", `"NVIDIA_VISIBLE_DEVICES"`, "limit", "remove the key"}},
		"envFrom ConfigMap, prefix makes the name": {pod: envFrom(cm("suffix", "NVIDIA_")), reason: ReasonGPUEnvFrom, says: []string{"sets NVIDIA_VISIBLE_DEVICES"}},
		"envFrom ConfigMap, prefix hides the name": {pod: envFrom(cm("devices", "APP_"))},
		"envFrom ConfigMap without the key":        {pod: envFrom(cm("plain", ""))},
		"envFrom ConfigMap missing at admission":   {pod: envFrom(cm("later", ""))},
		"envFrom Secret with the key": {pod: envFrom(sec("devices")), reason: ReasonGPUEnvFrom,
			says: []string{"envFrom[0].secretRef.name=devices", "NVIDIA_MIG_CONFIG_DEVICES"}},
		"envFrom of gpuvc's share ConfigMap (its own)": {pod: func() *corev1.Pod {
			p := envFrom(cm("gpuvc-share-p", ""))
			p.Annotations = map[string]string{"gpu-fraction": "0.5"}
			return p
		}()},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			withKeys(in)
			r := workloadCreate.Run(in)
			got := denialReasons(r)
			if tc.reason == "" {
				if r.Denied() {
					t.Fatalf("refused: %s", r.Message())
				}
				return
			}
			if !slices.Contains(got, tc.reason) {
				t.Fatalf("reasons %v, want %s", got, tc.reason)
			}
			for _, w := range tc.says {
				if !contains(r.Message(), w) {
					t.Errorf("message %q does not mention %q", r.Message(), w)
				}
			}
		})
	}
}

type fakeEnvSources map[string][]string

func (f fakeEnvSources) EnvKeys(_ context.Context, _, kind, name string) ([]string, error) {
	return f[kind+"/"+name], nil
}

// TestResolveEnvSources: the handler reads every envFrom on CREATE, only
// added ones on UPDATE, and never gpuvc's share ConfigMaps.
func TestResolveEnvSources(t *testing.T) {
	w := &Webhook{opts: Options{EnvSources: fakeEnvSources{"configMap/a": {"K"}, "secret/b": {"L"}}}}
	p := pod().EnvFromConfigMap("a").EnvFromConfigMap("gpuvc-share-p").Obj()
	p.Spec.Containers[0].EnvFrom = append(p.Spec.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}})
	got, err := w.resolveEnvSources(context.Background(), &Input{Pod: p})
	if err != nil || len(got) != 2 || got["configMap/a"][0] != "K" || got["secret/b"][0] != "L" {
		t.Fatalf("CREATE: %v %v", got, err)
	}
	got, err = w.resolveEnvSources(context.Background(), &Input{Pod: p, Old: p})
	if err != nil || len(got) != 0 {
		t.Fatalf("UPDATE without new envFrom read %v %v", got, err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
