package runtimeconfig

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func file(path, data string) File { return File{Path: path, Data: []byte(data)} }

func missing(path string) File { return File{Path: path, Err: fs.ErrNotExist} }

// Every combination of the three keys, with and without each: only
// accept-nvidia-visible-devices-envvar-when-unprivileged = false is safe; the
// other two keys and the mode never change the verdict (the toolkit falls back
// to the variable when no volume mount names a device, and cdi mode turns the
// variable into CDI device names under the same rule).
func TestEveryKeyCombination(t *testing.T) {
	accepts := map[string]string{"absent": "", "true": KeyAcceptEnvvar + " = true\n", "false": KeyAcceptEnvvar + " = false\n"}
	mounts := map[string]string{"absent": "", "true": KeyAcceptVolumeMounts + " = true\n", "false": KeyAcceptVolumeMounts + " = false\n"}
	modes := map[string]string{"absent": "", "auto": "mode = \"auto\"\n", "legacy": "mode = \"legacy\"\n", "cdi": "mode = \"cdi\"\n", "csv": "mode = \"csv\"\n"}
	for a, aKey := range accepts {
		for m, mKey := range mounts {
			for mode, modeKey := range modes {
				name := fmt.Sprintf("accept=%s/mounts=%s/mode=%s", a, m, mode)
				t.Run(name, func(t *testing.T) {
					data := aKey + mKey + "disable-require = false\n\n[nvidia-container-cli]\nldconfig = \"@/sbin/ldconfig\"\n\n[nvidia-container-runtime]\n" + modeKey +
						"\n[nvidia-container-runtime.modes.cdi]\nspec-dirs = [\"/etc/cdi\", \"/var/run/cdi\"]\n"
					v := Judge(Input{Files: []File{file(PathPackage, data)}})
					wantReason := map[string]string{"absent": ReasonEnvvarDefault, "true": ReasonEnvvarAccepted, "false": ReasonEnvvarIgnored}[a]
					if v.Safe != (a == "false") || v.Reason != wantReason || v.File != PathPackage {
						t.Fatalf("got %+v, want safe=%v reason %s", v, a == "false", wantReason)
					}
					if !strings.Contains(v.Message, PathPackage) || !strings.Contains(v.Message, KeyAcceptEnvvar) {
						t.Errorf("message names no file or key: %s", v.Message)
					}
					if !v.Safe && !strings.Contains(v.Message, "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false") {
						t.Errorf("unsafe message names no fix: %s", v.Message)
					}
					// Without a known device-list strategy, a safe file that
					// enables neither volume mounts nor CDI warns that GPU pods
					// get no GPU.
					wantWarn := v.Safe && m != "true" && mode != "cdi"
					if (len(v.Warnings) > 0) != wantWarn {
						t.Errorf("warnings %q, want some: %v", v.Warnings, wantWarn)
					}
				})
			}
		}
	}
}

func TestJudge(t *testing.T) {
	safe := Simulated
	for name, tc := range map[string]struct {
		in         Input
		want       Verdict
		msgContain []string
	}{
		"no file anywhere: the toolkit's defaults": {
			in:         Input{Files: []File{missing(PathPackage), missing(PathGPUOperator)}},
			want:       Verdict{Reason: ReasonConfigMissing},
			msgContain: []string{PathPackage, PathGPUOperator, KeyAcceptEnvvar + " = true", "DEVICE_LIST_STRATEGY=volume-mounts"},
		},
		"no paths at all": {
			in:   Input{},
			want: Verdict{Reason: ReasonConfigMissing},
		},
		"unreadable": {
			in:         Input{Files: []File{{Path: PathPackage, Err: fs.ErrPermission}}},
			want:       Verdict{Reason: ReasonConfigUnreadable, File: PathPackage},
			msgContain: []string{PathPackage, "permission denied"},
		},
		"not TOML": {
			in:         Input{Files: []File{file(PathPackage, "accept-nvidia-visible-devices-envvar-when-unprivileged = \n")}},
			want:       Verdict{Reason: ReasonConfigInvalid, File: PathPackage},
			msgContain: []string{PathPackage},
		},
		"a string where the toolkit wants a bool": {
			in:   Input{Files: []File{file(PathPackage, KeyAcceptEnvvar+" = \"false\"\n")}},
			want: Verdict{Reason: ReasonConfigInvalid, File: PathPackage},
		},
		"the key inside a table is not the key": {
			in:   Input{Files: []File{file(PathPackage, "[nvidia-container-runtime]\n"+KeyAcceptEnvvar+" = false\n")}},
			want: Verdict{Reason: ReasonEnvvarDefault, File: PathPackage},
		},
		"package file missing, GPU Operator's safe": {
			in:   Input{Files: []File{missing(PathPackage), file(PathGPUOperator, safe)}},
			want: Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: PathGPUOperator},
		},
		"both safe": {
			in:         Input{Files: []File{file(PathPackage, safe), file(PathGPUOperator, safe)}},
			want:       Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: PathPackage},
			msgContain: []string{PathPackage + ", " + PathGPUOperator},
		},
		"one safe, one with the default: unsafe, the second named": {
			in:         Input{Files: []File{file(PathPackage, safe), file(PathGPUOperator, "# generated\n")}},
			want:       Verdict{Reason: ReasonEnvvarDefault, File: PathGPUOperator},
			msgContain: []string{PathGPUOperator},
		},
		"the driver container's file accepts": {
			in:   Input{Files: []File{file(PathPackage, safe), missing(PathGPUOperator), file(PathDriverRoot, KeyAcceptEnvvar+" = true\n")}},
			want: Verdict{Reason: ReasonEnvvarAccepted, File: PathDriverRoot},
		},
		"empty file is the defaults": {
			in:   Input{Files: []File{file(PathPackage, "")}},
			want: Verdict{Reason: ReasonEnvvarDefault, File: PathPackage},
		},
		"safe, volume-mounts on, strategy volume-mounts: no warning": {
			in:   Input{Files: []File{file(PathPackage, safe)}, DeviceListStrategy: StrategyVolumeMounts},
			want: Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: PathPackage},
		},
		"safe, strategy envvar: GPU pods get no GPU": {
			in: Input{Files: []File{file(PathPackage, safe)}, DeviceListStrategy: StrategyEnvvar},
			want: Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: PathPackage, Warnings: []string{
				"the device plugin passes devices only in NVIDIA_VISIBLE_DEVICES (DEVICE_LIST_STRATEGY=envvar), which " + PathPackage + " ignores in unprivileged containers: GPU pods get no GPU; use DEVICE_LIST_STRATEGY=volume-mounts"}},
		},
		"safe, strategy envvar and volume-mounts: no warning": {
			in:   Input{Files: []File{file(PathPackage, safe)}, DeviceListStrategy: "envvar, volume-mounts"},
			want: Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: PathPackage},
		},
		"safe without volume mounts, strategy volume-mounts": {
			in: Input{Files: []File{file(PathPackage, KeyAcceptEnvvar+" = false\n")}, DeviceListStrategy: StrategyVolumeMounts},
			want: Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: PathPackage, Warnings: []string{
				"the device plugin passes devices as volume mounts (DEVICE_LIST_STRATEGY=volume-mounts) but " + PathPackage + " does not set " + KeyAcceptVolumeMounts + " = true: GPU pods get no GPU"}},
		},
		"safe without volume mounts, strategy cdi-cri: no warning": {
			in:   Input{Files: []File{file(PathPackage, KeyAcceptEnvvar+" = false\n")}, DeviceListStrategy: StrategyCDICRI},
			want: Verdict{Safe: true, Reason: ReasonEnvvarIgnored, File: PathPackage},
		},
		"strategy never makes an unsafe file safe": {
			in:   Input{Files: []File{file(PathPackage, KeyAcceptEnvvar+" = true\n")}, DeviceListStrategy: StrategyCDICRI},
			want: Verdict{Reason: ReasonEnvvarAccepted, File: PathPackage},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := Judge(tc.in)
			msg := got.Message
			got.Message = ""
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("verdict (-want +got):\n%s\nmessage: %s", d, msg)
			}
			for _, s := range tc.msgContain {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not contain %q", msg, s)
				}
			}
		})
	}
}

func TestRead(t *testing.T) {
	root := t.TempDir()
	write := func(p, data string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(PathPackage, Simulated, 0o644)
	if err := os.MkdirAll(filepath.Join(root, PathDriverRoot), 0o755); err != nil { // a folder where the file should be
		t.Fatal(err)
	}
	files := Read(root, DefaultPaths)
	if len(files) != 3 {
		t.Fatalf("got %d files", len(files))
	}
	if files[0].Path != PathPackage || files[0].Err != nil || string(files[0].Data) != Simulated {
		t.Errorf("package file: %+v", files[0])
	}
	if files[1].Path != PathGPUOperator || !os.IsNotExist(files[1].Err) {
		t.Errorf("operator file should be missing: %+v", files[1])
	}
	if files[2].Err == nil || os.IsNotExist(files[2].Err) || strings.Contains(files[2].Err.Error(), root) {
		t.Errorf("a folder should be unreadable, with the node's path only: %+v", files[2])
	}
	v := Judge(Input{Files: files})
	if v.Safe || v.Reason != ReasonConfigUnreadable || v.File != PathDriverRoot {
		t.Errorf("verdict %+v", v)
	}
}

func TestSimulatedIsSafe(t *testing.T) {
	v := Judge(Input{Files: []File{file(SimulatedPath, Simulated)}, DeviceListStrategy: StrategyVolumeMounts})
	if !v.Safe || len(v.Warnings) > 0 {
		t.Fatalf("%+v", v)
	}
}
