package install_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli/clitest"
)

// noCluster is a kubeconfig that does not exist: commands that fail on their flags
// or values must say so before ever reading it.
const noCluster = "/nonexistent/gpuvc-test.kubeconfig"

func TestDryRunPrintsManifestsWithoutACluster(t *testing.T) {
	r := gpuvc(t, "--kubeconfig", noCluster, "install", "--dry-run", "-n", "gpu-ops", "--set", "certManager.enabled=false")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	for _, s := range []string{"kind: CustomResourceDefinition", "name: teams.gpuvc.dev", "kind: Deployment", "name: gpuvc-manager", "namespace: gpu-ops"} {
		if !strings.Contains(r.out, s) {
			t.Errorf("output has no %q", s)
		}
	}
	if strings.Contains(r.out, "kind: Certificate") {
		t.Error("--set certManager.enabled=false did not reach the chart")
	}
	if !strings.Contains(r.errOut, "nothing was sent to a cluster") {
		t.Errorf("stderr: %s", r.errOut)
	}

	r = gpuvc(t, "--kubeconfig", noCluster, "install", "--dry-run", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var res installer.Result
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Action != installer.Rendered || res.Namespace != installer.DefaultNamespace || !strings.Contains(res.Manifest, "kind: Certificate") {
		t.Errorf("result %+v", res)
	}
}

// TestErrorsNameFlagValueAndFix: bad flags and values are refused before any
// cluster is contacted, with the flag or key, the value, and what to do.
func TestErrorsNameFlagValueAndFix(t *testing.T) {
	cases := map[string]struct {
		args []string
		want []string
	}{
		"output":         {[]string{"install", "-o", "xml"}, []string{`--output "xml" is not supported: use one of [table yaml json]`}},
		"namespace":      {[]string{"install", "-n", "GPU_ops"}, []string{`--namespace "GPU_ops" is not a valid namespace name`}},
		"timeout":        {[]string{"install", "--wait", "--timeout", "0s"}, []string{"--timeout 0s: must be more than 0, e.g. --timeout 5m"}},
		"dry-run wait":   {[]string{"install", "--dry-run", "--wait"}, []string{"--dry-run and --wait cannot be combined"}},
		"dry-run reuse":  {[]string{"install", "--dry-run", "--reuse-values"}, []string{"--dry-run and --reuse-values cannot be combined"}},
		"args":           {[]string{"install", "gpuvc"}, []string{`unknown command "gpuvc" for "gpuvc install"`}},
		"set syntax":     {[]string{"install", "--set", "manager.replicas"}, []string{`--set "manager.replicas"`, "has no value", "want KEY=VALUE"}},
		"values file":    {[]string{"install", "-f", "/nonexistent/values.yaml"}, []string{`-f/--values "/nonexistent/values.yaml"`, "no such file"}},
		"unknown key":    {[]string{"install", "--set", "manager.replica=3"}, []string{"manager: additional properties 'replica' not allowed", "docs/chart.md"}},
		"enum value":     {[]string{"install", "--set", "certManager.issuerRef.kind=Issuers"}, []string{`certManager.issuerRef.kind="Issuers": value must be one of 'Issuer', 'ClusterIssuer'`}},
		"type":           {[]string{"install", "--set-string", "manager.replicas=2"}, []string{`manager.replicas="2": got string, want integer`}},
		"no kubeconfig":  {[]string{"install"}, []string{`--kubeconfig "` + noCluster + `"`, "no such file"}},
		"un namespace":   {[]string{"uninstall", "-n", "-x"}, []string{`--namespace "-x" is not a valid namespace name`}},
		"un timeout":     {[]string{"uninstall", "--timeout", "-1s"}, []string{"--timeout -1s: must be more than 0"}},
		"un unknown arg": {[]string{"uninstall", "now"}, []string{`unknown command "now" for "gpuvc uninstall"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := gpuvc(t, append([]string{"--kubeconfig", noCluster}, tc.args...)...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1", r.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.errOut, w) {
					t.Errorf("error does not say %q:\n%s", w, r.errOut)
				}
			}
		})
	}
}

func TestHelpSaysWhatItDoes(t *testing.T) {
	r := gpuvc(t, "uninstall", "--help")
	for _, s := range []string{"like rm -f", "refuses", "Team", "--force", "unmanaged", "gpuvc.dev/team-cleanup", "CRD stays"} {
		if !strings.Contains(r.out, s) {
			t.Errorf("uninstall --help does not say %q", s)
		}
	}
	r = gpuvc(t, "install", "--help")
	for _, s := range []string{"helm upgrade --install", "--set-json", "--wait", "--dry-run", "--reuse-values", "--create-namespace"} {
		if !strings.Contains(r.out, s) {
			t.Errorf("install --help does not say %q", s)
		}
	}
}

// TestUnreachableClusterNamesIt: a kubeconfig whose server does not answer.
func TestUnreachableClusterNamesIt(t *testing.T) {
	kubeconfig := clitest.UnreachableKubeconfig(t)
	for _, cmd := range []string{"install", "uninstall"} {
		r := gpuvc(t, "--kubeconfig", kubeconfig, cmd, "--timeout", "10s")
		if r.code != 1 || !strings.Contains(r.errOut, "cannot reach the host cluster at https://127.0.0.1:1 (chosen by --kubeconfig and --context)") {
			t.Errorf("%s: exit %d %q", cmd, r.code, r.errOut)
		}
	}
}
