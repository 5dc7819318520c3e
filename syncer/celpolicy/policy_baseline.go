package celpolicy

import (
	"strings"

	"github.com/gpuvc/gpuvc/syncer"
)

// The Pod Security "baseline" rules beyond privileged, hostPath and host
// namespaces, as the webhook judges them (syncer/baseline.go, whose allowed
// sets these expressions use): they hold whatever the namespace's PSA labels
// or the team's podSecurity say.

// baselineRule is one rule. Findings are CEL lists of strings "field=value";
// pod-level ones (fields and annotations) are judged on CREATE, container
// ones on the containers a check looks at (see containerGroups).
type baselineRule struct {
	reason string
	// pod lists findings in pod-level fields; "" when the rule has none.
	pod string
	// container is a predicate over c; describe lists c's findings, with PATH
	// for the container's field path. "" when the rule has none.
	container, describe string
	// what names the offending setting in the static message.
	what, limit, why, fix string
}

func (r baselineRule) check() check {
	expr := []string{}
	findings := []string{}
	if r.container != "" {
		expr = append(expr, `!`+anyContainer(r.container))
		findings = append(findings, containerFindings(r.container, `(`+r.describe+`).join(", ")`))
	}
	if r.pod != "" {
		expr = append(expr, `(!variables.create || size(`+r.pod+`) == 0)`)
		findings = append(findings, `(variables.create ? `+r.pod+` : [])`)
	}
	tail := " is not allowed in team namespaces (limit: " + r.limit + "): " + r.why + "; " + r.fix
	return check{
		reason:     r.reason,
		expr:       strings.Join(expr, " && "),
		message:    r.what + tail,
		messageCEL: lit(prefix(r.reason)) + ` + (` + strings.Join(findings, " + ") + `).join(", ") + ` + lit(tail),
	}
}

// finding is a CEL list with "<field>=" + value when cond holds.
func finding(cond, field, value string) string {
	return `(` + cond + ` ? [` + field + ` + "=" + ` + value + `] : [])`
}

// badProfileAnnotations lists annotations whose key matches and whose value is
// neither the runtime's default profile nor one of the node's.
func badProfileAnnotations(key string) string {
	v := `variables.annotations[k]`
	return `variables.annotations.filter(k, (` + key + `) && !(` + v + ` in ["", "runtime/default", "docker/default"] || ` + v + `.startsWith("localhost/"))).` +
		`map(k, "metadata.annotations[" + k + "]=\"" + ` + v + ` + "\"")`
}

// seLinuxFindings lists what sc (an optional security context) asks of
// SELinux beyond baseline; path is a CEL string.
func seLinuxFindings(path, sc string) string {
	o := sc + `.?seLinuxOptions`
	typ, user, role := o+`.?type.orValue("")`, o+`.?user.orValue("")`, o+`.?role.orValue("")`
	return finding(typ+` != "" && !(`+typ+` in `+litList(syncer.BaselineSELinuxTypes)+`)`, path+` + ".seLinuxOptions.type"`, typ) + ` + ` +
		finding(user+` != ""`, path+` + ".seLinuxOptions.user"`, user) + ` + ` +
		finding(role+` != ""`, path+` + ".seLinuxOptions.role"`, role)
}

func baselineChecks() []check {
	podSC := `object.spec.?securityContext`
	cSC := `c.?securityContext`
	podPath, cPath := lit("spec.securityContext"), pathPlaceholder+` + ".securityContext"`
	caps := cSC + `.?capabilities.?add.orValue([])`
	capName := `(a.upperAscii().startsWith("CAP_") ? a.upperAscii().substring(4) : a.upperAscii())`
	badCap := `!(` + capName + ` in ` + litList(syncer.BaselineCapabilities) + `)`
	unconfined := func(sc, field string) string { return sc + `.?` + field + `.?type.orValue("") == "Unconfined"` }
	hostProcess := func(sc string) string { return sc + `.?windowsOptions.?hostProcess.orValue(false)` }
	ports := `c.?ports.orValue([])`
	sysctls := podSC + `.?sysctls.orValue([])`

	rules := []baselineRule{
		{
			reason:    ReasonCapabilityNotAllowed,
			what:      "a capability outside the baseline set",
			container: caps + `.exists(a, ` + badCap + `)`,
			describe: caps + `.transformList(j, a, ` + badCap + `, ` + cPath +
				` + ".capabilities.add[" + string(j) + "]=" + a)`,
			limit: "capabilities.add within the Pod Security baseline set " + strings.Join(syncer.BaselineCapabilities, ", ") + ", with or without CAP_",
			why:   "other capabilities (SYS_ADMIN, ALL, ...) give the container power over the node and every GPU on it",
			fix:   "remove it from capabilities.add (capabilities.drop is always allowed)",
		},
		{
			reason: ReasonSeccompUnconfined,
			what:   "seccompProfile.type Unconfined (or the unconfined seccomp annotation)",
			pod: finding(unconfined(podSC, "seccompProfile"), lit("spec.securityContext.seccompProfile.type"), `"Unconfined"`) + ` + ` +
				badProfileAnnotations(`k == `+lit(syncer.SeccompPodAnnotation)+` || k.startsWith(`+lit(syncer.SeccompContainerAnnotationPrefix)+`)`),
			container: unconfined(cSC, "seccompProfile"),
			describe:  `[` + cPath + ` + ".seccompProfile.type=Unconfined"]`,
			limit:     "seccompProfile.type RuntimeDefault, Localhost or unset",
			why:       "without a seccomp profile every system call reaches the node's kernel",
			fix:       "remove it or use RuntimeDefault",
		},
		{
			reason: ReasonAppArmorUnconfined,
			what:   "appArmorProfile.type Unconfined (or an unconfined AppArmor annotation)",
			pod: finding(unconfined(podSC, "appArmorProfile"), lit("spec.securityContext.appArmorProfile.type"), `"Unconfined"`) + ` + ` +
				badProfileAnnotations(`k.startsWith(`+lit(syncer.AppArmorAnnotationPrefix)+`)`),
			container: unconfined(cSC, "appArmorProfile"),
			describe:  `[` + cPath + ` + ".appArmorProfile.type=Unconfined"]`,
			limit:     "appArmorProfile.type RuntimeDefault, Localhost or unset; annotation " + syncer.AppArmorAnnotationPrefix + "* runtime/default or localhost/<profile>",
			why:       "an unconfined container loses the AppArmor profile that keeps it from the node",
			fix:       "remove it or use RuntimeDefault",
		},
		{
			reason:    ReasonProcMountNotAllowed,
			what:      "procMount other than Default",
			container: cSC + `.?procMount.orValue("Default") != "Default"`,
			describe:  `[` + cPath + ` + ".procMount=" + c.securityContext.procMount]`,
			limit:     "procMount Default or unset",
			why:       "an unmasked /proc exposes the node's kernel interfaces the runtime hides",
			fix:       "remove it",
		},
		{
			reason: ReasonSysctlNotAllowed,
			what:   "a sysctl outside the baseline set",
			pod: sysctls + `.transformList(i, s, !(s.name in ` + litList(syncer.BaselineSysctls) + `), ` +
				`"spec.securityContext.sysctls[" + string(i) + "].name=" + s.name)`,
			limit: "sysctls within the Pod Security baseline set " + strings.Join(syncer.BaselineSysctls, ", "),
			why:   "other sysctls change kernel settings shared with the node or the other pods on it",
			fix:   "remove it",
		},
		{
			reason:    ReasonHostPort,
			what:      "a non-zero hostPort",
			container: ports + `.exists(p, p.?hostPort.orValue(0) != 0)`,
			describe: ports + `.transformList(j, p, p.?hostPort.orValue(0) != 0, ` + pathPlaceholder +
				` + ".ports[" + string(j) + "].hostPort=" + string(p.hostPort))`,
			limit: "hostPort 0 or unset",
			why:   "a host port listens on the node's own network, outside the pod's network namespace",
			fix:   "remove it, and expose the port through a Service",
		},
		{
			reason:    ReasonHostProcess,
			what:      "windowsOptions.hostProcess=true",
			pod:       finding(hostProcess(podSC), lit("spec.securityContext.windowsOptions.hostProcess"), `"true"`),
			container: hostProcess(cSC),
			describe:  `[` + cPath + ` + ".windowsOptions.hostProcess=true"]`,
			limit:     "windowsOptions.hostProcess false or unset",
			why:       "a HostProcess container runs as a process of the Windows node itself",
			fix:       "remove it",
		},
		{
			reason:    ReasonSELinuxNotAllowed,
			what:      "seLinuxOptions with another type, a user or a role",
			pod:       seLinuxFindings(podPath, podSC),
			container: `size(` + seLinuxFindings(`""`, cSC) + `) > 0`,
			describe:  seLinuxFindings(cPath, cSC),
			limit:     "seLinuxOptions.type " + strings.Join(syncer.BaselineSELinuxTypes, ", ") + " or unset; user and role unset",
			why:       "another SELinux type, user or role lifts the confinement that keeps the container from the node",
			fix:       "remove it",
		},
	}
	out := make([]check, len(rules))
	for i, r := range rules {
		out[i] = r.check()
	}
	return out
}
