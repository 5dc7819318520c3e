package capdrop

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestMissingNamesTheLackingCapabilities(t *testing.T) {
	// This project's machines: every capability but CAP_SYS_RESOURCE (24).
	if got := Missing(0x000001fffeffffff); !slices.Equal(got, []string{"CAP_SYS_RESOURCE"}) {
		t.Fatalf("Missing = %v, want [CAP_SYS_RESOURCE]", got)
	}
	if got := Missing(1<<41 - 1); len(got) != 0 {
		t.Fatalf("Missing(all) = %v, want none", got)
	}
}

func TestDropKeepsEverythingElse(t *testing.T) {
	all := []string{"CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"}
	spec, _ := json.Marshal(map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"args":         []string{"/sbin/init"},
			"capabilities": map[string]any{"bounding": all, "effective": all, "permitted": all, "inheritable": all},
		},
		"linux": map[string]any{"namespaces": []any{map[string]string{"type": "pid"}}},
	})
	out, changed, err := Drop(spec, true, []string{"CAP_SYS_RESOURCE"})
	if err != nil || !changed {
		t.Fatalf("Drop: changed=%v err=%v", changed, err)
	}
	var got struct {
		OCIVersion string
		Process    struct {
			Args         []string
			Capabilities map[string][]string
		}
		Linux map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"CAP_CHOWN", "CAP_SYS_ADMIN"}
	for _, set := range []string{"bounding", "effective", "permitted", "inheritable"} {
		if !slices.Equal(got.Process.Capabilities[set], want) {
			t.Errorf("%s = %v, want %v", set, got.Process.Capabilities[set], want)
		}
	}
	if _, ok := got.Process.Capabilities["ambient"]; ok {
		t.Errorf("ambient appeared; it was absent")
	}
	if got.OCIVersion != "1.0.2" || !slices.Equal(got.Process.Args, []string{"/sbin/init"}) || got.Linux["namespaces"] == nil {
		t.Errorf("other fields changed: %s", out)
	}

	// A runc exec process file is the process itself.
	proc, _ := json.Marshal(map[string]any{"args": []string{"sh"}, "capabilities": map[string]any{"bounding": all}})
	out, changed, err = Drop(proc, false, []string{"CAP_SYS_RESOURCE"})
	if err != nil || !changed || string(out) != `{"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_ADMIN"]}}` {
		t.Fatalf("Drop(process) = %s changed=%v err=%v", out, changed, err)
	}
	// Nothing to drop: the file is left as it was.
	if out, changed, _ := Drop(proc, false, []string{"CAP_BPF"}); changed || string(out) != string(proc) {
		t.Fatalf("Drop without a match changed the spec: %s", out)
	}
}

func TestSpecFileFindsWhatRuncReads(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		path    string
		process bool
		ok      bool
	}{
		{[]string{"--root", "/run/r", "--log", "/l.json", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, "/b/config.json", true, true},
		{[]string{"--root=/run/r", "--systemd-cgroup", "run", "-b=/b2", "id"}, "/b2/config.json", true, true},
		{[]string{"create", "id"}, "config.json", true, true},
		{[]string{"--root", "/run/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, "/tmp/p.json", false, true},
		{[]string{"exec", "id", "sh"}, "", false, false},
		{[]string{"--root", "/run/r", "start", "id"}, "", false, false},
		{[]string{"--version"}, "", false, false},
	} {
		path, process, ok := SpecFile(tc.args)
		if path != tc.path || process != tc.process || ok != tc.ok {
			t.Errorf("SpecFile(%v) = %q,%v,%v; want %q,%v,%v", tc.args, path, process, ok, tc.path, tc.process, tc.ok)
		}
	}
}
