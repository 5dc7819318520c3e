// Package capdrop takes out of an OCI runtime spec (a bundle's config.json, or
// the process.json of `runc exec`) the capabilities this machine's capability
// bounding set cannot grant. Docker's --privileged asks for every capability the
// engine knows; where the bounding set lacks one (CAP_SYS_RESOURCE on this
// project's machines) runc fails with "unable to apply caps: operation not
// permitted". Dropping only what cannot be had keeps every other privilege.
package capdrop

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// names are the Linux capabilities by number (linux/capability.h).
var names = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// Missing returns the names of the capabilities a bounding set (CapBnd of
// /proc/self/status, hex) lacks, of those this package knows.
func Missing(capBnd uint64) []string {
	var out []string
	for i, n := range names {
		if capBnd&(1<<uint(i)) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// BoundingSet reads this process's capability bounding set.
func BoundingSet() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no CapBnd line")
}

// capSets are the capability lists of an OCI process.
var capSets = []string{"bounding", "effective", "inheritable", "permitted", "ambient"}

// Drop removes the named capabilities from every capability list of the OCI
// process in spec: under "process" for a config.json (process=false: the
// document is the process itself, as runc exec's --process file is). It
// reports whether anything changed; fields it does not know are kept as they are.
func Drop(spec []byte, process bool, drop []string) ([]byte, bool, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, false, err
	}
	proc := doc
	if process {
		raw, ok := doc["process"]
		if !ok {
			return spec, false, nil
		}
		if err := json.Unmarshal(raw, &proc); err != nil {
			return nil, false, fmt.Errorf("process: %w", err)
		}
	}
	raw, ok := proc["capabilities"]
	if !ok || string(raw) == "null" {
		return spec, false, nil
	}
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(raw, &caps); err != nil {
		return nil, false, fmt.Errorf("capabilities: %w", err)
	}
	changed := false
	for _, set := range capSets {
		var list []string
		if r, ok := caps[set]; !ok || json.Unmarshal(r, &list) != nil {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(list), func(c string) bool { return slices.Contains(drop, c) })
		if len(kept) == len(list) {
			continue
		}
		changed = true
		b, _ := json.Marshal(kept)
		caps[set] = b
	}
	if !changed {
		return spec, false, nil
	}
	b, _ := json.Marshal(caps)
	proc["capabilities"] = b
	if process {
		p, _ := json.Marshal(proc)
		doc["process"] = p
	}
	out, err := json.Marshal(doc)
	return out, true, err
}
