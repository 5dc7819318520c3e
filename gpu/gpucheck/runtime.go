package gpucheck

import (
	"context"

	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
)

// runtimeStep shows what the agent's runtime check (gpu/runtimeconfig) makes
// of this machine's NVIDIA container toolkit configuration: whether a
// container could take every GPU by setting NVIDIA_VISIBLE_DEVICES, so whether
// `gpuvc agent --gpu-runtime=fence` would taint the node. It is the node's
// setting, not a reading of gpuvc's to compare, hence info rows.
func runtimeStep(_ context.Context, c *Config, _ *facts, s *Step) {
	s.Reference = "the toolkit's config.toml at " + runtimeconfig.PathPackage + ", " + runtimeconfig.PathGPUOperator + ", " + runtimeconfig.PathDriverRoot
	files := runtimeconfig.Read(c.Root, []string{runtimeconfig.PathPackage, runtimeconfig.PathGPUOperator, runtimeconfig.PathDriverRoot})
	for _, f := range files {
		state := "present"
		if f.Err != nil {
			state = f.Err.Error()
		}
		s.add("", f.Path, state, "", Info, "")
	}
	v := runtimeconfig.Judge(runtimeconfig.Input{Files: files})
	verdict := "safe: the agent would leave the node untainted"
	if !v.Safe {
		verdict = "unsafe: the agent would taint the node (--gpu-runtime=fence) or warn (warn)"
	}
	s.add("", "verdict ("+v.Reason+")", verdict, "", Info, v.Message)
	for _, w := range v.Warnings {
		s.note("%s", w)
	}
}
