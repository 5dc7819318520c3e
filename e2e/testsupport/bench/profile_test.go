package bench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"
)

// profileSeconds is how long the API server is profiled at the start of a
// block: shorter than a block of 500 pods at a few hundred pods/s.
const profileSeconds = 4

// profiler returns the Costs.Profile hook of BENCH_PROFILE_DIR: for the first
// block of each name, a CPU profile of the API server (the control plane runs
// with --profiling=true then; profileSeconds from the block's start) and one of
// this process (the manager in process, and the benchmark's clients: the whole
// block), written as <name>-apiserver.pb.gz and <name>-gpuvc.pb.gz. Only one
// process-wide CPU profile can run: do not combine with -cpuprofile.
func profiler(dir string) func(ctx context.Context, name string) func() {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(ctx context.Context, name string) func() {
		mu.Lock()
		defer mu.Unlock()
		if seen[name] {
			return func() {}
		}
		seen[name] = true
		var wg sync.WaitGroup
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, profileSeconds*time.Second+30*time.Second)
			defer cancel()
			b, err := env.cp.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
				Param("seconds", fmt.Sprint(profileSeconds)).DoRaw(ctx)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, name+"-apiserver.pb.gz"), b, 0o644)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: profiling the API server (%s): %v\n", name, err)
			}
		})
		f, err := os.Create(filepath.Join(dir, name+"-gpuvc.pb.gz"))
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: profiling this process (%s): %v\n", name, err)
		}
		return func() {
			if f != nil {
				pprof.StopCPUProfile()
				f.Close()
			}
			wg.Wait()
		}
	}
}
