package syncer

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The Pod Security "baseline" rules beyond privileged, hostPath and host
// namespaces (security.go). gpuvc enforces them itself, so a team whose
// namespace has wrong PSA labels or podSecurity: privileged still gets no way
// onto the node. celpolicy writes the same allowed sets into its CEL fence.

// BaselineCapabilities are the capabilities a container may add. Names are
// compared upper-cased and without a CAP_ prefix, the spellings container
// runtimes accept: CAP_CHOWN and chown pass, cap_sys_admin and ALL do not.
var BaselineCapabilities = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// BaselineSysctls are the sysctls a pod may set, by exact name in dot
// notation, as baseline compares them (the slash spelling is refused).
var BaselineSysctls = []string{
	"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
}

// BaselineSELinuxTypes are the SELinux types a pod or container may ask for;
// seLinuxOptions user and role must stay unset.
var BaselineSELinuxTypes = []string{"container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

// Annotations the kubelet still reads for AppArmor and seccomp. Their allowed
// values are those of the fields: the runtime's default or a node's profile.
const (
	AppArmorAnnotationPrefix         = "container.apparmor.security.beta.kubernetes.io/"
	SeccompPodAnnotation             = "seccomp.security.alpha.kubernetes.io/pod"
	SeccompContainerAnnotationPrefix = "container.seccomp.security.alpha.kubernetes.io/"
)

// CapabilityName is a capability as BaselineCapabilities spells it.
func CapabilityName(c string) string { return strings.TrimPrefix(strings.ToUpper(c), "CAP_") }

// baselineRule is one rule: find names the first offending field and its value.
type baselineRule struct {
	reason, limit, why, fix string
	find                    func(pod *corev1.Pod) (field, value string, found bool)
}

func (r baselineRule) check(in *Input) (string, string, bool) {
	field, value, found := r.find(in.Pod)
	if !found {
		return "", "", false
	}
	return r.reason, fmt.Sprintf("%s=%s is not allowed in team namespaces (limit: %s): %s; %s",
		field, value, r.limit, r.why, r.fix), true
}

var (
	checkCapabilities = baselineRule{
		reason: ReasonCapabilityNotAllowed,
		limit:  "capabilities.add within the Pod Security baseline set " + strings.Join(BaselineCapabilities, ", ") + ", with or without CAP_",
		why:    "other capabilities (SYS_ADMIN, ALL, ...) give the container power over the node and every GPU on it",
		fix:    "remove it from capabilities.add (capabilities.drop is always allowed)",
		find: func(pod *corev1.Pod) (string, string, bool) {
			for _, c := range allContainers(pod) {
				if c.sc == nil || c.sc.Capabilities == nil {
					continue
				}
				for i, cp := range c.sc.Capabilities.Add {
					if !slices.Contains(BaselineCapabilities, CapabilityName(string(cp))) {
						return fmt.Sprintf("%s.securityContext.capabilities.add[%d]", c.path, i), string(cp), true
					}
				}
			}
			return "", "", false
		},
	}.check

	checkSeccomp = baselineRule{
		reason: ReasonSeccompUnconfined,
		limit:  "seccompProfile.type RuntimeDefault, Localhost or unset",
		why:    "without a seccomp profile every system call reaches the node's kernel",
		fix:    "remove it or use RuntimeDefault",
		find: func(pod *corev1.Pod) (string, string, bool) {
			unconfined := func(p *corev1.SeccompProfile) bool {
				return p != nil && p.Type == corev1.SeccompProfileTypeUnconfined
			}
			if sc := pod.Spec.SecurityContext; sc != nil && unconfined(sc.SeccompProfile) {
				return "spec.securityContext.seccompProfile.type", string(corev1.SeccompProfileTypeUnconfined), true
			}
			for _, c := range allContainers(pod) {
				if c.sc != nil && unconfined(c.sc.SeccompProfile) {
					return c.path + ".securityContext.seccompProfile.type", string(corev1.SeccompProfileTypeUnconfined), true
				}
			}
			return annotationFinding(pod, func(k, v string) bool {
				return (k == SeccompPodAnnotation || strings.HasPrefix(k, SeccompContainerAnnotationPrefix)) && !allowedProfileAnnotation(v)
			})
		},
	}.check

	checkAppArmor = baselineRule{
		reason: ReasonAppArmorUnconfined,
		limit:  "appArmorProfile.type RuntimeDefault, Localhost or unset; annotation " + AppArmorAnnotationPrefix + "* runtime/default or localhost/<profile>",
		why:    "an unconfined container loses the AppArmor profile that keeps it from the node",
		fix:    "remove it or use RuntimeDefault",
		find: func(pod *corev1.Pod) (string, string, bool) {
			unconfined := func(p *corev1.AppArmorProfile) bool {
				return p != nil && p.Type == corev1.AppArmorProfileTypeUnconfined
			}
			if sc := pod.Spec.SecurityContext; sc != nil && unconfined(sc.AppArmorProfile) {
				return "spec.securityContext.appArmorProfile.type", string(corev1.AppArmorProfileTypeUnconfined), true
			}
			for _, c := range allContainers(pod) {
				if c.sc != nil && unconfined(c.sc.AppArmorProfile) {
					return c.path + ".securityContext.appArmorProfile.type", string(corev1.AppArmorProfileTypeUnconfined), true
				}
			}
			return annotationFinding(pod, func(k, v string) bool {
				return strings.HasPrefix(k, AppArmorAnnotationPrefix) && !allowedProfileAnnotation(v)
			})
		},
	}.check

	checkProcMount = baselineRule{
		reason: ReasonProcMountNotAllowed,
		limit:  "procMount Default or unset",
		why:    "an unmasked /proc exposes the node's kernel interfaces the runtime hides",
		fix:    "remove it",
		find: func(pod *corev1.Pod) (string, string, bool) {
			for _, c := range allContainers(pod) {
				if c.sc != nil && c.sc.ProcMount != nil && *c.sc.ProcMount != corev1.DefaultProcMount {
					return c.path + ".securityContext.procMount", string(*c.sc.ProcMount), true
				}
			}
			return "", "", false
		},
	}.check

	checkSysctls = baselineRule{
		reason: ReasonSysctlNotAllowed,
		limit:  "sysctls within the Pod Security baseline set " + strings.Join(BaselineSysctls, ", "),
		why:    "other sysctls change kernel settings shared with the node or the other pods on it",
		fix:    "remove it",
		find: func(pod *corev1.Pod) (string, string, bool) {
			if sc := pod.Spec.SecurityContext; sc != nil {
				for i, s := range sc.Sysctls {
					if !slices.Contains(BaselineSysctls, s.Name) {
						return fmt.Sprintf("spec.securityContext.sysctls[%d].name", i), s.Name, true
					}
				}
			}
			return "", "", false
		},
	}.check

	checkHostPorts = baselineRule{
		reason: ReasonHostPort,
		limit:  "hostPort 0 or unset",
		why:    "a host port listens on the node's own network, outside the pod's network namespace",
		fix:    "remove it, and expose the port through a Service",
		find: func(pod *corev1.Pod) (string, string, bool) {
			for _, c := range allContainers(pod) {
				for i, p := range c.ports {
					if p.HostPort != 0 {
						return fmt.Sprintf("%s.ports[%d].hostPort", c.path, i), fmt.Sprint(p.HostPort), true
					}
				}
			}
			return "", "", false
		},
	}.check

	checkHostProcess = baselineRule{
		reason: ReasonHostProcess,
		limit:  "windowsOptions.hostProcess false or unset",
		why:    "a HostProcess container runs as a process of the Windows node itself",
		fix:    "remove it",
		find: func(pod *corev1.Pod) (string, string, bool) {
			hostProcess := func(w *corev1.WindowsSecurityContextOptions) bool {
				return w != nil && w.HostProcess != nil && *w.HostProcess
			}
			if sc := pod.Spec.SecurityContext; sc != nil && hostProcess(sc.WindowsOptions) {
				return "spec.securityContext.windowsOptions.hostProcess", "true", true
			}
			for _, c := range allContainers(pod) {
				if c.sc != nil && hostProcess(c.sc.WindowsOptions) {
					return c.path + ".securityContext.windowsOptions.hostProcess", "true", true
				}
			}
			return "", "", false
		},
	}.check

	checkSELinux = baselineRule{
		reason: ReasonSELinuxNotAllowed,
		limit:  "seLinuxOptions.type " + strings.Join(BaselineSELinuxTypes, ", ") + " or unset; user and role unset",
		why:    "another SELinux type, user or role lifts the confinement that keeps the container from the node",
		fix:    "remove it",
		find: func(pod *corev1.Pod) (string, string, bool) {
			if sc := pod.Spec.SecurityContext; sc != nil {
				if f, v, ok := seLinuxFinding("spec.securityContext", sc.SELinuxOptions); ok {
					return f, v, ok
				}
			}
			for _, c := range allContainers(pod) {
				if c.sc == nil {
					continue
				}
				if f, v, ok := seLinuxFinding(c.path+".securityContext", c.sc.SELinuxOptions); ok {
					return f, v, ok
				}
			}
			return "", "", false
		},
	}.check
)

// baselineChecks are the rules above, in the order the chains run them.
var baselineChecks = []Check{
	checkCapabilities, checkSeccomp, checkAppArmor, checkProcMount,
	checkSysctls, checkHostPorts, checkHostProcess, checkSELinux,
}

func seLinuxFinding(path string, o *corev1.SELinuxOptions) (string, string, bool) {
	switch {
	case o == nil:
		return "", "", false
	case o.Type != "" && !slices.Contains(BaselineSELinuxTypes, o.Type):
		return path + ".seLinuxOptions.type", o.Type, true
	case o.User != "":
		return path + ".seLinuxOptions.user", o.User, true
	case o.Role != "":
		return path + ".seLinuxOptions.role", o.Role, true
	}
	return "", "", false
}

// allowedProfileAnnotation: the runtime's default profile (docker/default is
// its old seccomp name) or one of the node's.
func allowedProfileAnnotation(v string) bool {
	return v == "" || v == "runtime/default" || v == "docker/default" || strings.HasPrefix(v, "localhost/")
}

// annotationFinding names the first annotation (by key) bad refuses.
func annotationFinding(pod *corev1.Pod, bad func(k, v string) bool) (string, string, bool) {
	keys := make([]string, 0, len(pod.Annotations))
	for k := range pod.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if v := pod.Annotations[k]; bad(k, v) {
			return "metadata.annotations[" + k + "]", fmt.Sprintf("%q", v), true
		}
	}
	return "", "", false
}
