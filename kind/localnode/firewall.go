package localnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// chainPrefixes name the iptables chains of the node: kube-proxy's and the
// kubelet's (KUBE-), kube-router's (KUBE-ROUTER-, KUBE-POD-FW-, KUBE-NWPLCY-), the
// CNI plugins' (CNI-) and this package's guard (GPUVC-).
var chainPrefixes = []string{"KUBE-", "CNI-", guardPrefix}

// nodeChainPrefixes are the chains a node's teardown removes; the host's guard
// stays until the host is released.
var nodeChainPrefixes = []string{"KUBE-", "CNI-"}

const guardPrefix = "GPUVC-"

// ipsetPrefixes name kube-router's ipsets (KUBE-SRC-, KUBE-DST-; inet6: for IPv6).
var ipsetPrefixes = []string{"KUBE-", "inet6:KUBE-"}

const guardChain = guardPrefix + "LOCALNODE"

// guardRules keep pod traffic on this machine: a packet arriving from the bridge
// must go to a pod or service address (the host's bridge address included).
func guardRules() string {
	return fmt.Sprintf(`*raw
:%[1]s - [0:0]
-A %[1]s -d %[2]s -j RETURN
-A %[1]s -d %[3]s -j RETURN
-A %[1]s -j DROP
-I PREROUTING 1 -i %[4]s -j %[1]s
COMMIT
`, guardChain, podNetwork, serviceCIDR, bridgeName)
}

func installGuard(ctx context.Context) error {
	return iptablesRestore(ctx, "iptables", guardRules())
}

func iptablesRestore(ctx context.Context, family, rules string) error {
	cmd := exec.CommandContext(ctx, family+"-restore", "--noflush")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s-restore: %w: %s\ninput:\n%s", family, err, bytes.TrimSpace(out), rules)
	}
	return nil
}

// ownChains lists the chains with one of the prefixes per table ("nat" → chains)
// in iptables-save output.
func ownChains(save string, prefixes []string) map[string][]string {
	out := map[string][]string{}
	table := ""
	for _, line := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			if hasPrefix(name, prefixes) {
				out[table] = append(out[table], name)
			}
		}
	}
	return out
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// cleanupRules turns iptables-save output into iptables-restore --noflush input
// that deletes the chains with one of the prefixes and every rule of another chain
// jumping to them, leaving everything else alone. It returns "" when there is
// nothing to remove.
func cleanupRules(save string, prefixes []string) string {
	var b strings.Builder
	var table string
	var deletes, chains []string
	flush := func() {
		if table == "" || (len(deletes) == 0 && len(chains) == 0) {
			return
		}
		fmt.Fprintf(&b, "*%s\n", table)
		for _, d := range deletes {
			b.WriteString(d + "\n")
		}
		for _, c := range chains {
			fmt.Fprintf(&b, "-F %s\n", c)
		}
		for _, c := range chains {
			fmt.Fprintf(&b, "-X %s\n", c)
		}
		b.WriteString("COMMIT\n")
	}
	for _, line := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			flush()
			table, deletes, chains = line[1:], nil, nil
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			if hasPrefix(name, prefixes) {
				chains = append(chains, name)
			}
		case strings.HasPrefix(line, "-A "):
			fields := strings.Fields(line)
			if len(fields) < 2 || hasPrefix(fields[1], prefixes) {
				continue // flushed with its chain
			}
			for i, f := range fields[:len(fields)-1] {
				if (f == "-j" || f == "-g" || f == "--jump" || f == "--goto") && hasPrefix(fields[i+1], prefixes) {
					deletes = append(deletes, "-D"+strings.TrimPrefix(line, "-A"))
					break
				}
			}
		}
	}
	flush()
	return b.String()
}

// cleanupIPTables removes the chains with one of the prefixes and the rules
// jumping to them, for IPv4 and IPv6.
func cleanupIPTables(ctx context.Context, prefixes []string) error {
	var errs []error
	for _, family := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(family + "-save"); err != nil {
			continue
		}
		// A second pass catches rules a dying daemon added during the first.
		for range 2 {
			out, err := exec.CommandContext(ctx, family+"-save").Output()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s-save: %w", family, err))
				break
			}
			rules := cleanupRules(string(out), prefixes)
			if rules == "" {
				break
			}
			if err := iptablesRestore(ctx, family, rules); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// leftoverChains lists the node's and the host's chains still present, as
// "family/table/chain".
func leftoverChains(ctx context.Context) ([]string, error) {
	var left []string
	for _, family := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(family + "-save"); err != nil {
			continue
		}
		out, err := exec.CommandContext(ctx, family+"-save").Output()
		if err != nil {
			return nil, fmt.Errorf("%s-save: %w", family, err)
		}
		for table, chains := range ownChains(string(out), chainPrefixes) {
			for _, c := range chains {
				left = append(left, family+"/"+table+"/"+c)
			}
		}
	}
	slices.Sort(left)
	return left, nil
}

func ownIPSets(ctx context.Context) ([]string, error) {
	if _, err := exec.LookPath("ipset"); err != nil {
		return nil, nil
	}
	out, err := exec.CommandContext(ctx, "ipset", "list", "-n").Output()
	if err != nil {
		return nil, fmt.Errorf("ipset list: %w", err)
	}
	var own []string
	for _, name := range strings.Fields(string(out)) {
		for _, p := range ipsetPrefixes {
			if strings.HasPrefix(name, p) {
				own = append(own, name)
				break
			}
		}
	}
	return own, nil
}

// cleanupIPSets destroys kube-router's ipsets. A set still referenced by a rule
// cannot go; the kernel drops references a moment after the rules are gone, so
// destruction is retried briefly.
func cleanupIPSets(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		sets, err := ownIPSets(ctx)
		if err != nil || len(sets) == 0 {
			return err
		}
		var errs []error
		for _, s := range sets {
			if out, err := exec.CommandContext(ctx, "ipset", "destroy", s).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("ipset destroy %s: %w: %s", s, err, bytes.TrimSpace(out)))
			}
		}
		if len(errs) == 0 || time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
