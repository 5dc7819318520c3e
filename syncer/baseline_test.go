package syncer

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

func addCaps(caps ...corev1.Capability) *corev1.Pod { return pod().AddCapabilities(caps...).Obj() }

// withSC and withPodSC edit the first container's or the pod's security context.
func withSC(edit func(sc *corev1.SecurityContext)) *corev1.Pod {
	return pod().ContainerSecurity(edit).Obj()
}

func withPodSC(edit func(sc *corev1.PodSecurityContext)) *corev1.Pod {
	return pod().PodSecurity(edit).Obj()
}

// restrictedSC is the container security context gpuvc gives its own pods
// (reservation pods, the control plane in restricted namespaces).
func restrictedSC(sc *corev1.SecurityContext) {
	sc.AllowPrivilegeEscalation = ptr.To(false)
	sc.RunAsNonRoot = ptr.To(true)
	sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
}

func TestCheckCapabilities(t *testing.T) {
	initCap := pod().InitContainer("setup").Edit(func(p *corev1.Pod) {
		p.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
	}).Obj()
	ephemeral := pod().Edit(func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}},
		}}}
	}).Obj()
	runCheckTable(t, checkCapabilities, map[string]checkCase{
		"no capabilities":            {pod: pod().Obj()},
		"NET_BIND_SERVICE":           {pod: addCaps("NET_BIND_SERVICE")},
		"every baseline capability":  {pod: addCaps("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT")},
		"CAP_ prefix and lower case": {pod: addCaps("CAP_CHOWN", "kill", "cap_setuid")},
		"drop ALL":                   {pod: withSC(restrictedSC)},
		"drop ALL, add NET_BIND_SERVICE": {pod: withSC(func(sc *corev1.SecurityContext) {
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}
		})},
		"SYS_ADMIN": {pod: addCaps("SYS_ADMIN"), reason: ReasonCapabilityNotAllowed, says: []string{
			"spec.containers[0].securityContext.capabilities.add[0]=SYS_ADMIN", "limit: capabilities.add within the Pod Security baseline set", "NET_BIND_SERVICE", "capabilities.drop is always allowed"}},
		"ALL":                      {pod: addCaps("ALL"), reason: ReasonCapabilityNotAllowed, says: []string{"capabilities.add[0]=ALL"}},
		"all, lower case":          {pod: addCaps("all"), reason: ReasonCapabilityNotAllowed, says: []string{"capabilities.add[0]=all"}},
		"CAP_SYS_ADMIN":            {pod: addCaps("CAP_SYS_ADMIN"), reason: ReasonCapabilityNotAllowed, says: []string{"=CAP_SYS_ADMIN"}},
		"allowed then forbidden":   {pod: addCaps("CHOWN", "SYS_MODULE"), reason: ReasonCapabilityNotAllowed, says: []string{"capabilities.add[1]=SYS_MODULE"}},
		"init container NET_ADMIN": {pod: initCap, reason: ReasonCapabilityNotAllowed, says: []string{"spec.initContainers[0].securityContext.capabilities.add[0]=NET_ADMIN"}},
		"ephemeral SYS_PTRACE":     {pod: ephemeral, reason: ReasonCapabilityNotAllowed, says: []string{"spec.ephemeralContainers[0]"}},
	})
}

func TestCheckSeccompAndAppArmor(t *testing.T) {
	runCheckTable(t, checkSeccomp, map[string]checkCase{
		"unset": {pod: pod().Obj()},
		"RuntimeDefault": {pod: withPodSC(func(sc *corev1.PodSecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		})},
		"Localhost": {pod: withSC(func(sc *corev1.SecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("p.json")}
		})},
		"pod Unconfined": {pod: withPodSC(func(sc *corev1.PodSecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}),
			reason: ReasonSeccompUnconfined, says: []string{"spec.securityContext.seccompProfile.type=Unconfined", "limit: seccompProfile.type RuntimeDefault, Localhost or unset", "use RuntimeDefault"}},
		"container Unconfined": {pod: withSC(func(sc *corev1.SecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}),
			reason: ReasonSeccompUnconfined, says: []string{"spec.containers[0].securityContext.seccompProfile.type=Unconfined"}},
		"legacy annotation unconfined": {pod: pod().Annotation(SeccompPodAnnotation, "unconfined").Obj(),
			reason: ReasonSeccompUnconfined, says: []string{`metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]="unconfined"`}},
		"legacy annotation runtime/default": {pod: pod().Annotation(SeccompContainerAnnotationPrefix+"main", "runtime/default").Obj()},
	})
	runCheckTable(t, checkAppArmor, map[string]checkCase{
		"unset": {pod: pod().Obj()},
		"RuntimeDefault": {pod: withSC(func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		})},
		"annotation localhost": {pod: pod().Annotation(AppArmorAnnotationPrefix+"main", "localhost/my-profile").Obj()},
		"pod Unconfined": {pod: withPodSC(func(sc *corev1.PodSecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}),
			reason: ReasonAppArmorUnconfined, says: []string{"spec.securityContext.appArmorProfile.type=Unconfined", "limit: appArmorProfile.type RuntimeDefault, Localhost or unset"}},
		"container Unconfined": {pod: withSC(func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}),
			reason: ReasonAppArmorUnconfined, says: []string{"spec.containers[0].securityContext.appArmorProfile.type=Unconfined"}},
		"annotation unconfined": {pod: pod().Annotation(AppArmorAnnotationPrefix+"main", "unconfined").Obj(),
			reason: ReasonAppArmorUnconfined, says: []string{`metadata.annotations[container.apparmor.security.beta.kubernetes.io/main]="unconfined"`, "runtime/default or localhost/<profile>"}},
	})
}

func TestCheckProcMountAndSysctls(t *testing.T) {
	runCheckTable(t, checkProcMount, map[string]checkCase{
		"unset":   {pod: pod().Obj()},
		"Default": {pod: withSC(func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.DefaultProcMount) })},
		"Unmasked": {pod: withSC(func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) }),
			reason: ReasonProcMountNotAllowed, says: []string{"spec.containers[0].securityContext.procMount=Unmasked", "limit: procMount Default or unset"}},
	})
	sysctls := func(names ...string) *corev1.Pod {
		p := pod()
		for _, n := range names {
			p.Sysctl(n, "1")
		}
		return p.Obj()
	}
	runCheckTable(t, checkSysctls, map[string]checkCase{
		"none":           {pod: pod().Obj()},
		"every safe one": {pod: sysctls(BaselineSysctls...)},
		"kernel.msgmax": {pod: sysctls("net.ipv4.tcp_syncookies", "kernel.msgmax"), reason: ReasonSysctlNotAllowed,
			says: []string{"spec.securityContext.sysctls[1].name=kernel.msgmax", "limit: sysctls within the Pod Security baseline set", "net.ipv4.ip_local_port_range"}},
		"slash notation": {pod: sysctls("net/ipv4/tcp_syncookies"), reason: ReasonSysctlNotAllowed, says: []string{"=net/ipv4/tcp_syncookies"}},
	})
}

func TestCheckHostPortsAndHostProcess(t *testing.T) {
	ports := func(ps ...corev1.ContainerPort) *corev1.Pod {
		return pod().Edit(func(p *corev1.Pod) { p.Spec.Containers[0].Ports = ps }).Obj()
	}
	runCheckTable(t, checkHostPorts, map[string]checkCase{
		"container port": {pod: ports(corev1.ContainerPort{ContainerPort: 8080})},
		"hostPort 0":     {pod: ports(corev1.ContainerPort{ContainerPort: 8080, HostPort: 0})},
		"hostPort 8080": {pod: ports(corev1.ContainerPort{ContainerPort: 80}, corev1.ContainerPort{ContainerPort: 8080, HostPort: 8080}), reason: ReasonHostPort,
			says: []string{"spec.containers[0].ports[1].hostPort=8080", "limit: hostPort 0 or unset", "Service"}},
	})
	runCheckTable(t, checkHostProcess, map[string]checkCase{
		"unset": {pod: pod().Obj()},
		"hostProcess false": {pod: withSC(func(sc *corev1.SecurityContext) {
			sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(false)}
		})},
		"pod hostProcess": {pod: withPodSC(func(sc *corev1.PodSecurityContext) {
			sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}),
			reason: ReasonHostProcess, says: []string{"spec.securityContext.windowsOptions.hostProcess=true", "limit: windowsOptions.hostProcess false or unset"}},
		"container hostProcess": {pod: withSC(func(sc *corev1.SecurityContext) {
			sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}),
			reason: ReasonHostProcess, says: []string{"spec.containers[0].securityContext.windowsOptions.hostProcess=true"}},
	})
}

func TestCheckSELinux(t *testing.T) {
	container := func(o corev1.SELinuxOptions) *corev1.Pod {
		return withSC(func(sc *corev1.SecurityContext) { sc.SELinuxOptions = &o })
	}
	runCheckTable(t, checkSELinux, map[string]checkCase{
		"unset":                  {pod: pod().Obj()},
		"container_t with level": {pod: container(corev1.SELinuxOptions{Type: "container_t", Level: "s0:c123,c456"})},
		"level only":             {pod: withPodSC(func(sc *corev1.PodSecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1"} })},
		"spc_t": {pod: container(corev1.SELinuxOptions{Type: "spc_t"}), reason: ReasonSELinuxNotAllowed,
			says: []string{"spec.containers[0].securityContext.seLinuxOptions.type=spc_t", "container_t, container_init_t, container_kvm_t, container_engine_t", "user and role unset"}},
		"pod user": {pod: withPodSC(func(sc *corev1.PodSecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"} }), reason: ReasonSELinuxNotAllowed,
			says: []string{"spec.securityContext.seLinuxOptions.user=system_u"}},
		"role": {pod: container(corev1.SELinuxOptions{Type: "container_t", Role: "system_r"}), reason: ReasonSELinuxNotAllowed,
			says: []string{"seLinuxOptions.role=system_r"}},
	})
}

// TestBaselineInChains: the rules hold for every role and for kubectl debug,
// and for a team whatever its Pod Security level — the webhook never reads it.
func TestBaselineInChains(t *testing.T) {
	sysAdmin := addCaps("SYS_ADMIN")
	for name, chain := range map[string]Chain{"workload": createChain(contract.RoleWorkload), "control plane": createChain(contract.RoleControlPlane), "kubectl debug": ephemeralUpdate} {
		in := input(sysAdmin.DeepCopy())
		in.Trusted = true // gpuvc's own requests get no exemption either
		if r := chain.Run(in); !slices.Contains(denialReasons(r), ReasonCapabilityNotAllowed) {
			t.Errorf("%s: SYS_ADMIN admitted: %v", name, r.Denials)
		}
	}
	// gpuvc's own pods: reservation pods and restricted control planes.
	own := withSC(restrictedSC)
	own.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	for _, check := range baselineChecks {
		if reason, msg, denied := check(input(own)); denied {
			t.Errorf("gpuvc's own security context refused: %s: %s", reason, msg)
		}
	}
}
