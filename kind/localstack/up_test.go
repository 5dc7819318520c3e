package localstack

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

func TestUpSteps(t *testing.T) {
	for name, tc := range map[string]struct {
		opts Options
		want []string
	}{
		"kwok nodes only": {Options{KwokOnly: true}, []string{
			"check the prebuilt binaries", "empty the folder", "start the control plane", "install the DeviceClasses of the simulated GPUs' DRA driver",
		}},
		"kwok nodes only, with Kueue": {Options{KwokOnly: true, Kueue: true}, []string{
			"check the prebuilt binaries", "empty the folder", "start the control plane", "install the DeviceClasses of the simulated GPUs' DRA driver", "start Kueue",
		}},
		"a real node (dev cluster, trial, e2e suite)": {Options{}, []string{
			"check the prebuilt binaries", "check that this machine can run a real node", "empty the folder",
			"build the node's images (cached after the first run)", "start the control plane", "install the DeviceClasses of the simulated GPUs' DRA driver", "take the machine's node slot", "start the real node system-0", "start the storage provisioner, cluster DNS and metrics-server",
		}},
		"a real node with Kueue": {Options{Kueue: true, Attached: true}, []string{
			"check the prebuilt binaries", "check that this machine can run a real node", "empty the folder",
			"build the node's images (cached after the first run)", "start the control plane", "install the DeviceClasses of the simulated GPUs' DRA driver", "take the machine's node slot", "start the real node system-0", "start the storage provisioner, cluster DNS and metrics-server",
			"start Kueue",
		}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, bringup.Names(newUpper(tc.opts, nil).steps())); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

// The kwok pools default to nodepool.Default(), without the system pool when
// the real node is that pool.
func TestUpDefaultPools(t *testing.T) {
	names := func(pools []nodepool.Pool) (out []string) {
		for _, p := range pools {
			out = append(out, p.Name)
		}
		return out
	}
	all := names(nodepool.Default())
	if !slices.Contains(all, RealPool) {
		t.Fatalf("nodepool.Default() %v has no %s pool", all, RealPool)
	}
	if got := names(newUpper(Options{KwokOnly: true}, nil).s.Pools); !slices.Equal(got, all) {
		t.Errorf("kwok only: pools %v, want %v", got, all)
	}
	if got := names(newUpper(Options{}, nil).s.Pools); slices.Contains(got, RealPool) || len(got) != len(all)-1 {
		t.Errorf("with a real node: pools %v, want %v without %s", got, all, RealPool)
	}
	own := []nodepool.Pool{}
	if got := newUpper(Options{Pools: own}, nil).s.Pools; got == nil || len(got) != 0 {
		t.Errorf("Options.Pools empty: pools %v, want none", got)
	}
}

// A failure before the folder is emptied changes nothing there: Up names the
// step and leaves what the folder holds (a running stack, say).
func TestUpChangesNothingBeforeItEmptiesTheFolder(t *testing.T) {
	t.Setenv("GPUVC_CACHE_DIR", t.TempDir()) // no manifest
	dir := t.TempDir()
	keep := filepath.Join(dir, "cluster", "state.json")
	if err := os.MkdirAll(filepath.Dir(keep), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Up(context.Background(), Options{Dir: dir, KwokOnly: true})
	if err == nil || !strings.HasPrefix(err.Error(), "localstack: step 1 of 4, check the prebuilt binaries: ") {
		t.Fatalf("error %v: want the binaries step named", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("Up removed what the folder held: %v", err)
	}
}

func TestUpRefusesOptionsItCannotHonour(t *testing.T) {
	for name, opts := range map[string]Options{
		"no folder":                      {},
		"in-process GPUs, detached node": {Dir: t.TempDir(), InProcessGPUs: true},
	} {
		if _, err := Up(context.Background(), opts); err == nil {
			t.Errorf("%s: Up accepted %+v", name, opts)
		}
	}
}

func TestStopLeavesADetachedStackToDown(t *testing.T) {
	if err := (&Stack{}).Stop(); err == nil {
		t.Error("Stop of a detached stack succeeded; Down removes it")
	}
}
