package team

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// specFlags maps a Team field to the `team create` flag that sets it, longest
// prefix first where one is the prefix of another.
var specFlags = []struct{ field, flag string }{
	{"metadata.name", "NAME"},
	{"spec.pool", "--pool"},
	{"spec.quota.gpus", "--gpus"},
	{"spec.quota.mig", "--mig"},
	{"spec.quota.cpu", "--cpu"},
	{"spec.quota.memory", "--memory"},
	{"spec.quota.storage", "--storage"},
	{"spec.quota.pods", "--pods"},
	{"spec.maxGPUsPerPod", "--max-gpus-per-pod"},
	{"spec.gpuSharing.maxPodsPerSharedGPU", "--max-pods-per-shared-gpu"},
	{"spec.gpuSharing.wholeGPUAs", "--whole-gpu-as"},
	{"spec.gpuSharing.fractions", "--fractions"},
	{"spec.podSecurity", "--pod-security"},
	{"spec.members", "--member"},
	{"spec.network.allowedEgressCIDRs", "--allow-egress"},
	{"spec.vcluster.chartVersion", "--vcluster-version"},
	{"spec.idle.vcluster.sleepAfter", "--sleep-after"},
	{"spec.idle.gpuPods.after", "--idle-gpu-after"},
	{"spec.idle.gpuPods.action", "--idle-gpu-action"},
	{"spec.idle.gpuPods.maxUtilizationPercent", "--idle-gpu-max-utilization"},
}

// invalidFlags reports validation errors in the terms of the command line: each
// line names the flag, then the field, the value and the rule.
func invalidFlags(name string, errs field.ErrorList) error {
	lines := make([]string, 0, len(errs))
	for _, e := range errs {
		line := e.Error()
		for _, f := range specFlags {
			if strings.HasPrefix(e.Field, f.field) {
				line = f.flag + ": " + line
				break
			}
		}
		lines = append(lines, line)
	}
	if len(lines) == 1 {
		return fmt.Errorf("team %s is invalid: %s", name, lines[0])
	}
	return fmt.Errorf("team %s is invalid:\n  %w", name, errors.New(strings.Join(lines, "\n  ")))
}
