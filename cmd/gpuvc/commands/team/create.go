package team

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

type createFlags struct {
	pool                 string
	gpus                 int32
	mig                  []string
	cpu, memory, storage string
	pods                 int32
	maxGPUsPerPod        int32
	fractions            bool
	maxPodsPerSharedGPU  int32
	wholeGPUAs           string
	podSecurity          string
	members              []string
	noDefaultDeny        bool
	egress               []string
	vclusterVersion      string
	sleepAfter           time.Duration
	idleGPUAfter         time.Duration
	idleGPUAction        string
	idleGPUMaxPercent    int32
	dra                  bool
	deviceClasses        []string
	dryRun               dryRunFlag
	out                  *cli.Output
	waitFlags
}

func newCreateCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &createFlags{out: cli.NewOutput("yaml", "json")}
	cmd := &cobra.Command{
		Use:   "create NAME --pool POOL [flags]",
		Short: "Create a team: its own vCluster, host namespace, GPU quota and node pool",
		Example: "  gpuvc team create fraud --pool a100 --gpus 4 --mig 1g.10gb=4 --fractions --member Group:fraud-ml --wait\n" +
			"  gpuvc team create research --pool a100 --mig 3g.40gb=2 --whole-gpu-as 3g.40gb --dry-run=client > research.yaml",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.dryRun.validate(); err != nil {
				return err
			}
			t, err := f.team(args[0], cmd)
			if err != nil {
				return err
			}
			if errs := t.Validate(); len(errs) > 0 {
				return invalidFlags(t.Name, errs)
			}
			if err := f.out.Validate(); err != nil {
				return err
			}
			if f.dryRun.mode == dryRunClient {
				_, err := f.out.PrintStructured(streams.Out, t)
				return err
			}
			c, err := connect(globals)
			if err != nil {
				return err
			}
			if err := c.Create(cmd.Context(), t, f.dryRun.options()...); err != nil {
				return err
			}
			for _, w := range c.PoolWarnings(cmd.Context(), t) {
				fmt.Fprintf(streams.ErrOut, "warning: team %s: %s\n", t.Name, w)
			}
			if f.dryRun.mode == dryRunServer {
				_, err := f.out.PrintStructured(streams.Out, forOutput(t))
				return err
			}
			fmt.Fprintf(streams.Out, "team/%s created\n", t.Name)
			if !f.wait {
				fmt.Fprintf(streams.ErrOut, "the manager provisions it now; follow with `gpuvc team get %s`\n", t.Name)
				return nil
			}
			return waitAndReport(cmd, streams, c, t.Name, f.timeout)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.pool, "pool", "", "node pool the team's GPU pods run on (required)")
	fs.Int32Var(&f.gpus, "gpus", 0, "whole-GPU quota (nvidia.com/gpu), including GPUs held for fractions")
	fs.StringArrayVar(&f.mig, "mig", nil, "MIG quota as PROFILE=COUNT, e.g. 1g.10gb=4 (repeatable)")
	fs.StringVar(&f.cpu, "cpu", "", "CPU request quota, e.g. 64")
	fs.StringVar(&f.memory, "memory", "", "memory request quota, e.g. 256Gi")
	fs.StringVar(&f.storage, "storage", "", "storage request quota, e.g. 1Ti")
	fs.Int32Var(&f.pods, "pods", 0, "maximum number of pods")
	fs.Int32Var(&f.maxGPUsPerPod, "max-gpus-per-pod", 0, "maximum whole GPUs one pod may request")
	fs.BoolVar(&f.fractions, "fractions", false, "allow fractional GPUs (gpu-fraction / gpu-memory annotations)")
	fs.Int32Var(&f.maxPodsPerSharedGPU, "max-pods-per-shared-gpu", 0, "pods sharing one GPU at most (default 8)")
	fs.StringVar(&f.wholeGPUAs, "whole-gpu-as", "", "serve plain nvidia.com/gpu requests with this MIG profile, e.g. 3g.40gb")
	fs.StringVar(&f.podSecurity, "pod-security", "", "Pod Security Standard: privileged, baseline (default) or restricted")
	fs.StringArrayVar(&f.members, "member", nil, "member as User:NAME or Group:NAME (repeatable)")
	fs.BoolVar(&f.noDefaultDeny, "no-default-deny", false, "do not isolate the team's pods with a default-deny NetworkPolicy")
	fs.StringArrayVar(&f.egress, "allow-egress", nil, "CIDR the team's pods may reach (repeatable)")
	fs.StringVar(&f.vclusterVersion, "vcluster-version", "", "vCluster chart version (default: the manager's)")
	fs.DurationVar(&f.sleepAfter, "sleep-after", 0, "put the team's vCluster to sleep after this long without team pods or API connections, e.g. 30m (5m to 720h; spec.idle.vcluster.sleepAfter); its next request wakes it")
	fs.DurationVar(&f.idleGPUAfter, "idle-gpu-after", 0, "act on GPU pods whose GPUs stay at or below --idle-gpu-max-utilization for this long, e.g. 1h (5m to 720h; spec.idle.gpuPods.after; needs the agents' metrics)")
	fs.StringVar(&f.idleGPUAction, "idle-gpu-action", "", "what happens then: Notify (an event on the pod, the default), Evict (the pod), or Sleep (once every GPU pod of the team is idle: its pods evicted and the vCluster put to sleep; needs --sleep-after) (spec.idle.gpuPods.action)")
	fs.Int32Var(&f.idleGPUMaxPercent, "idle-gpu-max-utilization", 0, "GPU utilization in percent at or below which a pod counts as idle (0 to 100; spec.idle.gpuPods.maxUtilizationPercent)")
	fs.BoolVar(&f.dra, "dra", false, "let the team's pods ask for devices through DRA ResourceClaims (spec.dra; needs the chart's vcluster.dra)")
	fs.StringArrayVar(&f.deviceClasses, "device-class", nil, "DeviceClass the team's claims may name (repeatable; implies --dra; default gpu.nvidia.com, and mig.nvidia.com with --mig)")
	f.dryRun.add(cmd, "check the Team without creating it and print it (see -o)")
	f.out.AddFlag(fs)
	f.waitFlags.add(cmd, "the team is Ready")
	_ = cmd.MarkFlagRequired("pool")
	return cmd
}

// forOutput is a Team as a user would write it: what the server stored, without
// the fields it manages itself.
func forOutput(t *gpuvcv1.Team) *gpuvcv1.Team {
	out := &gpuvcv1.Team{TypeMeta: metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"}, Spec: t.Spec}
	out.Name, out.Labels, out.Annotations = t.Name, t.Labels, t.Annotations
	return out
}

// team builds the Team from the flags, naming the flag at fault on bad input.
func (f *createFlags) team(name string, cmd *cobra.Command) (*gpuvcv1.Team, error) {
	t := &gpuvcv1.Team{
		TypeMeta:   metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gpuvcv1.TeamSpec{Pool: f.pool, PodSecurity: f.podSecurity},
	}
	set := cmd.Flags().Changed
	if set("gpus") {
		t.Spec.Quota.GPUs = &f.gpus
	}
	if set("pods") {
		t.Spec.Quota.Pods = &f.pods
	}
	if set("max-gpus-per-pod") {
		t.Spec.MaxGPUsPerPod = &f.maxGPUsPerPod
	}
	for _, q := range []struct {
		flag, value string
		dst         **resource.Quantity
	}{{"cpu", f.cpu, &t.Spec.Quota.CPU}, {"memory", f.memory, &t.Spec.Quota.Memory}, {"storage", f.storage, &t.Spec.Quota.Storage}} {
		if q.value == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.value)
		if err != nil {
			return nil, fmt.Errorf("--%s %q is not a quantity (e.g. 64, 500m, 256Gi): %v", q.flag, q.value, err)
		}
		*q.dst = &v
	}
	for _, m := range f.mig {
		profile, count, ok := strings.Cut(m, "=")
		n, err := strconv.ParseInt(count, 10, 32)
		if !ok || profile == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("--mig %q: want PROFILE=COUNT with a count ≥ 0, e.g. 1g.10gb=4", m)
		}
		if t.Spec.Quota.MIG == nil {
			t.Spec.Quota.MIG = map[string]int32{}
		}
		t.Spec.Quota.MIG[profile] = int32(n)
	}
	if f.fractions || f.wholeGPUAs != "" || set("max-pods-per-shared-gpu") {
		t.Spec.GPUSharing = &gpuvcv1.GPUSharing{Fractions: f.fractions, WholeGPUAs: f.wholeGPUAs, MaxPodsPerSharedGPU: f.maxPodsPerSharedGPU}
	}
	for _, m := range f.members {
		kind, who, ok := strings.Cut(m, ":")
		if !ok || (kind != "User" && kind != "Group") || who == "" {
			return nil, fmt.Errorf("--member %q: want User:NAME or Group:NAME", m)
		}
		t.Spec.Members = append(t.Spec.Members, gpuvcv1.Member{Kind: kind, Name: who})
	}
	if f.noDefaultDeny || len(f.egress) > 0 {
		deny := !f.noDefaultDeny
		t.Spec.Network = &gpuvcv1.Network{DefaultDeny: &deny, AllowedEgressCIDRs: f.egress}
	}
	if f.vclusterVersion != "" {
		t.Spec.VCluster = &gpuvcv1.VClusterSpec{ChartVersion: f.vclusterVersion}
	}
	if f.dra || len(f.deviceClasses) > 0 {
		t.Spec.DRA = &gpuvcv1.DRA{DeviceClasses: f.deviceClasses}
	}
	if set("sleep-after") {
		t.Spec.Idle = &gpuvcv1.Idle{VCluster: &gpuvcv1.VClusterIdle{SleepAfter: metav1.Duration{Duration: f.sleepAfter}}}
	}
	if set("idle-gpu-after") || set("idle-gpu-action") || set("idle-gpu-max-utilization") {
		if t.Spec.Idle == nil {
			t.Spec.Idle = &gpuvcv1.Idle{}
		}
		t.Spec.Idle.GPUPods = &gpuvcv1.GPUPodIdle{After: metav1.Duration{Duration: f.idleGPUAfter}, Action: f.idleGPUAction, MaxUtilizationPercent: f.idleGPUMaxPercent}
	}
	return t, nil
}
