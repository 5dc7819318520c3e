package celpolicy_test

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// The Pod Security baseline rules, enforced by the fence itself: team fraud's
// namespace is labelled as the manager labels a team with podSecurity:
// privileged, so Pod Security Admission lets all of these through.

// baselineAttacks join TestAttacks.
func baselineAttacks() map[string]struct {
	pod  *testobj.PodWrapper
	want []string
} {
	type a = struct {
		pod  *testobj.PodWrapper
		want []string
	}
	sc := func(name string, edit func(sc *corev1.SecurityContext)) *testobj.PodWrapper {
		return tenantPod(name).ContainerSecurity(edit)
	}
	podSC := func(name string, edit func(sc *corev1.PodSecurityContext)) *testobj.PodWrapper {
		return tenantPod(name).PodSecurity(edit)
	}
	return map[string]a{
		"podSecurity privileged team: capabilities.add SYS_ADMIN": {tenantPod("cap-sys-admin").AddCapabilities("SYS_ADMIN"),
			refusal(c.ReasonCapabilityNotAllowed, "spec.containers[0].securityContext.capabilities.add[0]=SYS_ADMIN",
				"limit: capabilities.add within the Pod Security baseline set", "NET_BIND_SERVICE", "capabilities.drop is always allowed")},
		"capabilities.add ALL on an init container": {tenantPod("cap-all-init").InitContainer("setup").Edit(func(p *corev1.Pod) {
			p.Spec.InitContainers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"ALL"}}}
		}), refusal(c.ReasonCapabilityNotAllowed, "spec.initContainers[0].securityContext.capabilities.add[0]=ALL")},
		"capabilities.add cap_sys_admin (prefix, lower case)": {tenantPod("cap-prefixed").AddCapabilities("CHOWN", "cap_sys_admin"),
			refusal(c.ReasonCapabilityNotAllowed, "capabilities.add[1]=cap_sys_admin")},
		"seccomp Unconfined (pod)": {podSC("seccomp-pod", func(sc *corev1.PodSecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}), refusal(c.ReasonSeccompUnconfined, "spec.securityContext.seccompProfile.type=Unconfined", "limit: seccompProfile.type RuntimeDefault, Localhost or unset")},
		"seccomp Unconfined (container)": {sc("seccomp-container", func(sc *corev1.SecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}), refusal(c.ReasonSeccompUnconfined, "spec.containers[0].securityContext.seccompProfile.type=Unconfined")},
		"AppArmor Unconfined": {sc("apparmor-field", func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}), refusal(c.ReasonAppArmorUnconfined, "spec.containers[0].securityContext.appArmorProfile.type=Unconfined", "limit: appArmorProfile.type RuntimeDefault, Localhost or unset")},
		"AppArmor annotation unconfined": {tenantPod("apparmor-annotation").Annotation(syncer.AppArmorAnnotationPrefix+"main", "unconfined"),
			refusal(c.ReasonAppArmorUnconfined, `metadata.annotations[container.apparmor.security.beta.kubernetes.io/main]="unconfined"`)},
		// The API server accepts Unmasked only in a user namespace.
		"procMount Unmasked": {sc("procmount", func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) }).
			Edit(func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(false) }),
			refusal(c.ReasonProcMountNotAllowed, "spec.containers[0].securityContext.procMount=Unmasked", "limit: procMount Default or unset")},
		"sysctl kernel.msgmax": {tenantPod("sysctl").Sysctl("net.ipv4.tcp_syncookies", "1").Sysctl("kernel.msgmax", "65536"),
			refusal(c.ReasonSysctlNotAllowed, "spec.securityContext.sysctls[1].name=kernel.msgmax", "limit: sysctls within the Pod Security baseline set")},
		"hostPort 8080": {tenantPod("hostport").HostPort(8080, 8080),
			refusal(c.ReasonHostPort, "spec.containers[0].ports[0].hostPort=8080", "limit: hostPort 0 or unset")},
		// The API server accepts HostProcess pods only with hostNetwork; the
		// fence names hostProcess first.
		"Windows hostProcess": {podSC("hostprocess", func(sc *corev1.PodSecurityContext) {
			sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}).HostNetwork(), refusal(c.ReasonHostProcess, "spec.securityContext.windowsOptions.hostProcess=true", "limit: windowsOptions.hostProcess false or unset")},
		"SELinux type spc_t": {sc("selinux-type", func(sc *corev1.SecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} }),
			refusal(c.ReasonSELinuxNotAllowed, "spec.containers[0].securityContext.seLinuxOptions.type=spc_t", "container_t, container_init_t, container_kvm_t, container_engine_t")},
		"SELinux user": {podSC("selinux-user", func(sc *corev1.PodSecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"} }),
			refusal(c.ReasonSELinuxNotAllowed, "spec.securityContext.seLinuxOptions.user=system_u", "user and role unset")},
	}
}

// baselineLegitimate join TestLegitimatePods: what baseline allows passes.
func baselineLegitimate() map[string]*testobj.PodWrapper {
	return map[string]*testobj.PodWrapper{
		"drop ALL, add NET_BIND_SERVICE": tenantPod("ok-caps").ContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}
		}),
		"baseline capabilities with CAP_ and lower case": tenantPod("ok-caps-spelling").AddCapabilities("CAP_CHOWN", "kill", "SYS_CHROOT"),
		// The security context of gpuvc's reservation pods.
		"restricted security context": tenantPod("ok-restricted").ContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.AllowPrivilegeEscalation = ptr.To(false)
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
			sc.ReadOnlyRootFilesystem = ptr.To(true)
		}).PodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.RunAsNonRoot = ptr.To(true)
			sc.RunAsUser = ptr.To[int64](65532)
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}),
		"RuntimeDefault profiles, container_t, safe sysctl, container port": tenantPod("ok-profiles").ContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
			sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t", Level: "s0:c1,c2"}
			sc.ProcMount = ptr.To(corev1.DefaultProcMount)
		}).PodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}).Sysctl("net.ipv4.ip_unprivileged_port_start", "0").HostPort(8080, 0),
	}
}

// labelNamespace adds labels to a namespace.
func labelNamespace(ctx context.Context, ns string, labels map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	_, err = env.cp.Client.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
