package charts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
	"github.com/gpuvc/gpuvc/syncer/share"
	"github.com/gpuvc/gpuvc/vclusters"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// teamNS is a team namespace as the manager names them (team-<name>).
const teamNS = "team-fraud"

// grants are the RBAC rules that apply to one ServiceAccount, as the chart renders
// them: cluster-wide (ClusterRoles bound by ClusterRoleBindings) and per namespace
// (Roles or ClusterRoles bound by RoleBindings).
type grants struct {
	cluster     []rbacv1.PolicyRule
	byNamespace map[string][]rbacv1.PolicyRule
}

// grantsOf collects the rules bound to the ServiceAccount sa of the release namespace.
func grantsOf(t *testing.T, m manifests, sa string) grants {
	t.Helper()
	g := grants{byNamespace: map[string][]rbacv1.PolicyRule{}}
	subject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == testNamespace
		})
	}
	role := func(ref rbacv1.RoleRef, namespace string) []rbacv1.PolicyRule {
		if ref.Kind == "ClusterRole" {
			return get[rbacv1.ClusterRole](t, m, "ClusterRole", ref.Name).Rules
		}
		r := get[rbacv1.Role](t, m, "Role", ref.Name)
		if r.Namespace != namespace {
			t.Fatalf("RoleBinding in %s refers to Role %s/%s", namespace, r.Namespace, r.Name)
		}
		return r.Rules
	}
	for _, u := range m {
		switch u.GetKind() {
		case "ClusterRoleBinding":
			b := get[rbacv1.ClusterRoleBinding](t, m, u.GetKind(), u.GetName())
			if subject(b.Subjects) {
				g.cluster = append(g.cluster, role(b.RoleRef, "")...)
			}
		case "RoleBinding":
			b := get[rbacv1.RoleBinding](t, m, u.GetKind(), u.GetName())
			if subject(b.Subjects) {
				g.byNamespace[b.Namespace] = append(g.byNamespace[b.Namespace], role(b.RoleRef, b.Namespace)...)
			}
		}
	}
	return g
}

// in returns the rules that apply in a namespace ("" = cluster-scoped requests).
func (g grants) in(namespace string) []rbacv1.PolicyRule {
	if namespace == "" {
		return g.cluster
	}
	return append(slices.Clone(g.cluster), g.byNamespace[namespace]...)
}

// allows reports whether rules allow verb on group/resource (with subresource, e.g.
// "pods/exec") named name ("" = any name, as for create, list and watch).
func allows(rules []rbacv1.PolicyRule, verb, group, resource, name string) bool {
	for _, r := range rules {
		if has(r.Verbs, verb) && has(r.APIGroups, group) && has(r.Resources, resource) &&
			(len(r.ResourceNames) == 0 || (name != "" && slices.Contains(r.ResourceNames, name))) {
			return true
		}
	}
	return false
}

func has(list []string, s string) bool {
	return slices.Contains(list, s) || slices.Contains(list, rbacv1.VerbAll)
}

// covers reports what of rule the holder's rules do not allow — what the API server's
// escalation check would refuse when the holder creates a role granting rule.
func covers(holder []rbacv1.PolicyRule, rule rbacv1.PolicyRule) []string {
	names := rule.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	var missing []string
	for _, g := range rule.APIGroups {
		for _, res := range rule.Resources {
			for _, v := range rule.Verbs {
				for _, n := range names {
					if !allows(holder, v, g, res, n) {
						missing = append(missing, strings.TrimSpace(fmt.Sprintf("%s %s %s", v, groupResource(g, res), n)))
					}
				}
			}
		}
	}
	return missing
}

// request is one API request a component makes, and why.
type request struct {
	verb, group, resource, namespace, name string
	why                                    string
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

func (r request) String() string {
	where := "cluster-wide"
	if r.namespace != "" {
		where = "in " + r.namespace
	}
	name := ""
	if r.name != "" {
		name = " " + r.name
	}
	return fmt.Sprintf("%s %s%s %s (%s)", r.verb, groupResource(r.group, r.resource), name, where, r.why)
}

func verbs(vs []string, group, resource, namespace, why string) []request {
	var out []request
	for _, v := range vs {
		out = append(out, request{verb: v, group: group, resource: resource, namespace: namespace, why: why})
	}
	return out
}

var (
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	apply     = []string{"get", "create", "patch", "delete"}
	informer  = []string{"list", "watch"}
)

// managerNeeds are the requests of the manager's code today (Team reconciler, Helm,
// webhook, share controller contract), outside of what the vCluster chart renders,
// which TestManagerRBACCoversVClusterChart checks.
func managerNeeds() []request {
	return concatRequests(
		verbs([]string{"get", "list", "watch", "update", "patch"}, "gpuvc.dev", "teams", "", "reconciler: Teams and their finalizer"),
		verbs([]string{"update", "patch"}, "gpuvc.dev", "teams/status", "", "reconciler: conditions"),
		verbs([]string{"update"}, "gpuvc.dev", "teams/finalizers", "", "owner references blocking deletion"),
		verbs(append(slices.Clone(apply), "list", "watch"), "", "namespaces", "", "reconciler: team namespaces; webhook: namespace labels"),
		verbs([]string{"get", "list", "watch"}, "", "nodes", "", "webhook: node pools; share controller"),
		verbs(informer, "", "pods", "", "share controller informer"),
		verbs(informer, "", "secrets", "", "manager cache (label-filtered, cluster-wide)"),
		verbs(informer, "", "configmaps", "", "share controller: share ConfigMaps"),
		verbs(informer, "", "resourcequotas", "", "reconciler Owns; quota usage"),
		verbs(informer, "", "limitranges", "", "reconciler Owns"),
		verbs(informer, "networking.k8s.io", "networkpolicies", "", "reconciler Owns"),
		verbs(informer, "rbac.authorization.k8s.io", "roles", "", "reconciler Owns"),
		verbs(informer, "rbac.authorization.k8s.io", "rolebindings", "", "reconciler Owns"),
		verbs(informer, "apps", "statefulsets", "", "reconciler Watches: vCluster readiness"),
		verbs(informer, "apps", "deployments", "", "reconciler Watches: vCluster readiness (ephemeral)"),
		celFence(),
		verbs([]string{"create", "patch"}, "", "events", "default", "events on Teams"),
		verbs([]string{"create", "patch"}, "events.k8s.io", "events", "default", "events on Teams"),
		verbs([]string{"create", "patch"}, "events.k8s.io", "events", teamNS, "webhook events on pods"),
		verbs(apply, "", "resourcequotas", teamNS, "reconciler: quota"),
		verbs(apply, "", "limitranges", teamNS, "reconciler: limits"),
		verbs(apply, "networking.k8s.io", "networkpolicies", teamNS, "reconciler: network policies"),
		verbs(apply, "rbac.authorization.k8s.io", "roles", teamNS, "reconciler: member Role; reservation pods' Role"),
		verbs(apply, "rbac.authorization.k8s.io", "rolebindings", teamNS, "reconciler: member RoleBinding"),
		verbs(readWrite, "", "secrets", teamNS, "kubeconfig Secret; Helm release history"),
		verbs(readWrite, "", "pods", teamNS, "share controller: reservation pods, lifting gates"),
		verbs(readWrite, "", "serviceaccounts", teamNS, "reservation pods' ServiceAccount"),
		verbs(readWrite, "", "configmaps", teamNS, "share ConfigMaps"),
		verbs([]string{"get"}, "apps", "statefulsets", teamNS, "vCluster readiness"),
		verbs([]string{"create"}, "", "pods/eviction", teamNS, "idle GPU-pod policy: Evict"),
		verbs([]string{"get"}, "apps", "deployments", teamNS, "vCluster readiness"),
		verbs(readWrite, "", "configmaps", testNamespace, "GPU accounting: the teams' ledgers"),
	)
}

// celFence: celpolicy.Install applies the fixed policies and bindings at start.
func celFence() []request {
	var out []request
	for _, res := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		out = append(out, request{verb: "create", group: "admissionregistration.k8s.io", resource: res, why: "CEL fence (celpolicy.Install)"})
		for _, name := range []string{celpolicy.PolicyName, celpolicy.GuardPolicyName, celpolicy.BindingName, celpolicy.GuardBindingName} {
			out = append(out, request{verb: "patch", group: "admissionregistration.k8s.io", resource: res, name: name, why: "CEL fence (server-side apply)"})
		}
	}
	return out
}

func concatRequests(lists ...[]request) []request {
	var out []request
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// leaderElectionNeeds and rotatorNeeds depend on the values.
func leaderElectionNeeds() []request {
	return []request{
		{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: testNamespace, why: "leader election"},
		{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: testNamespace, name: LeaderElectionID, why: "leader election"},
		{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: testNamespace, name: LeaderElectionID, why: "leader election"},
	}
}

func rotatorNeeds() []request {
	var out []request
	for _, res := range []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"} {
		out = append(out, verbs(informer, "admissionregistration.k8s.io", res, "", "rotator watches webhook configurations")...)
		out = append(out, request{verb: "get", group: "admissionregistration.k8s.io", resource: res, name: WebhookConfigurationName, why: "rotator"})
		out = append(out, request{verb: "update", group: "admissionregistration.k8s.io", resource: res, name: WebhookConfigurationName, why: "rotator writes caBundle"})
	}
	out = append(out, verbs([]string{"get", "list", "watch"}, "", "secrets", testNamespace, "rotator cache")...)
	out = append(out, request{verb: "update", group: "", resource: "secrets", namespace: testNamespace, name: WebhookSecretName, why: "rotator writes certificates"})
	return out
}

// realNodesOnly are requests the manager needs only with --sync-real-nodes, to
// install vCluster's ClusterRole (which grants these reads) and binding.
func realNodesOnly() []request {
	const why = "vCluster's ClusterRole with --sync-real-nodes"
	return concatRequests(
		verbs([]string{"get", "create", "patch", "update", "delete"}, "rbac.authorization.k8s.io", "clusterroles", "", why),
		verbs([]string{"get", "create", "patch", "update", "delete"}, "rbac.authorization.k8s.io", "clusterrolebindings", "", why),
		verbs([]string{"get", "list", "watch"}, "", "nodes/status", "", why),
		verbs([]string{"get"}, "", "nodes/proxy", "", why),
		verbs([]string{"get"}, "", "nodes/stats", "", why),
	)
}

// managerMustNot are requests no value set may allow.
var managerMustNot = []request{
	{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", why: "would lift the escalation check"},
	{verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles", why: "would lift the escalation check"},
	{verb: "escalate", group: "rbac.authorization.k8s.io", resource: "roles", namespace: teamNS, why: "would lift the escalation check"},
	{verb: "bind", group: "rbac.authorization.k8s.io", resource: "roles", namespace: teamNS, why: "would lift the escalation check"},
	{verb: "impersonate", group: "", resource: "users", why: "identity theft"},
	{verb: "impersonate", group: "", resource: "serviceaccounts", namespace: "kube-system", why: "identity theft"},
	{verb: "create", group: "", resource: "serviceaccounts/token", namespace: "kube-system", why: "token minting"},
	{verb: "patch", group: "", resource: "nodes", why: "node labels decide pools"},
	{verb: "update", group: "", resource: "nodes", why: "node labels decide pools"},
	{verb: "delete", group: "", resource: "nodes", why: "nodes are not gpuvc's"},
	{verb: "patch", group: "", resource: "nodes/status", why: "capacity is the device plugin's"},
	{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", why: "CRDs come from the chart"},
	{verb: "update", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", why: "CRDs come from the chart"},
	{verb: "create", group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations", why: "configurations come from the chart"},
	{verb: "delete", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: WebhookConfigurationName, why: "would open the fence"},
	{verb: "update", group: "admissionregistration.k8s.io", resource: "validatingwebhookconfigurations", name: "someone-elses", why: "foreign webhooks"},
	{verb: "delete", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", name: "gpuvc-pod-fence", why: "would open the CEL fence"},
	{verb: "delete", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings", name: "gpuvc-pod-fence", why: "would open the CEL fence"},
	{verb: "patch", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", name: "gpuvc-agent-node-fence", why: "the agent's fence is the chart's"},
	{verb: "delete", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings", name: "gpuvc-agent-node-fence", why: "the agent's fence is the chart's"},
	{verb: "create", group: "certificates.k8s.io", resource: "certificatesigningrequests", why: "not needed"},
	{verb: "create", group: "", resource: "persistentvolumes", why: "not needed"},
	{verb: "create", group: "storage.k8s.io", resource: "storageclasses", why: "not needed"},
	{verb: "delete", group: "gpuvc.dev", resource: "teams", why: "Teams belong to platform engineers"},
	{verb: "create", group: "gpuvc.dev", resource: "teams", why: "Teams belong to platform engineers"},
}

func TestManagerRBAC(t *testing.T) {
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, values)
			g := grantsOf(t, m, ManagerServiceAccount)
			needs := managerNeeds()
			_, c := managerContainer(t, m)
			if slices.Contains(c.Args, "--leader-elect") {
				needs = append(needs, leaderElectionNeeds()...)
			} else if allows(g.in(testNamespace), "create", "coordination.k8s.io", "leases", "") {
				t.Error("leases granted without leader election")
			}
			if slices.Contains(c.Args, "--sync-real-nodes") {
				needs = append(needs, realNodesOnly()...)
			} else {
				for _, r := range realNodesOnly() {
					if allows(g.in(r.namespace), r.verb, r.group, r.resource, r.name) {
						t.Errorf("without --sync-real-nodes the manager still may %s", r)
					}
				}
			}
			if m.find("Certificate", "gpuvc-webhook") == nil { // the manager rotates its own
				needs = append(needs, rotatorNeeds()...)
			} else {
				for _, r := range rotatorNeeds() {
					if r.resource != "secrets" && allows(g.in(r.namespace), r.verb, r.group, r.resource, r.name) {
						t.Errorf("with cert-manager the manager still may %s", r)
					}
				}
			}
			for _, r := range needs {
				if !allows(g.in(r.namespace), r.verb, r.group, r.resource, r.name) {
					t.Errorf("manager may not %s", r)
				}
			}
			// What the share controller declares it needs, cluster-wide.
			for _, rule := range share.RBACRules() {
				if missing := covers(g.cluster, rule); len(missing) > 0 {
					t.Errorf("share controller (share.RBACRules) may not: %v", missing)
				}
			}
			for _, r := range managerMustNot {
				if allows(g.in(r.namespace), r.verb, r.group, r.resource, r.name) {
					t.Errorf("manager may %s — it must not", r)
				}
			}
		})
	}
}

// TestNoWildcards: no role of the chart uses "*" (verbs, groups, resources, names).
func TestNoWildcards(t *testing.T) {
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, values)
			for _, u := range m {
				var rules []rbacv1.PolicyRule
				switch u.GetKind() {
				case "ClusterRole":
					rules = get[rbacv1.ClusterRole](t, m, u.GetKind(), u.GetName()).Rules
				case "Role":
					rules = get[rbacv1.Role](t, m, u.GetKind(), u.GetName()).Rules
				default:
					continue
				}
				for _, r := range rules {
					for _, s := range concat(r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs) {
						if strings.Contains(s, "*") {
							t.Errorf("%s %s: wildcard %q in rule %+v", u.GetKind(), u.GetName(), s, r)
						}
					}
					if len(r.NonResourceURLs) > 0 {
						t.Errorf("%s %s: non-resource URLs %v", u.GetKind(), u.GetName(), r.NonResourceURLs)
					}
				}
			}
		})
	}
}

func TestAgentRBAC(t *testing.T) {
	// The chart grants exactly what the agent's library says it needs, per
	// --gpu-failure policy (the default is taint) and --gpu-runtime policy
	// (the default is fence).
	type policies struct {
		health  nodeagent.HealthPolicy
		runtime nodeagent.RuntimePolicy
	}
	for values, p := range map[string]policies{
		"":                                  {nodeagent.HealthTaint, nodeagent.RuntimeFence},
		"agent: {gpuFailure: report}":       {nodeagent.HealthReport, nodeagent.RuntimeFence},
		"agent: {gpuFailure: cordon-drain}": {nodeagent.HealthCordonDrain, nodeagent.RuntimeFence},
		"agent: {gpuFailure: \"off\"}":      {"", nodeagent.RuntimeFence},
		"agent: {gpuFailure: \"off\", gpuRuntime: {policy: warn}}":    {"", nodeagent.RuntimeWarn},
		"agent: {gpuFailure: \"off\", gpuRuntime: {policy: \"off\"}}": {"", ""},
		"agent: {gpuRuntime: {policy: \"off\"}}":                      {nodeagent.HealthTaint, ""},
	} {
		g := grantsOf(t, mustRender(t, values), AgentServiceAccount)
		if diff := cmp.Diff(nodeagent.RBACRules(p.health, p.runtime), g.cluster); diff != "" {
			t.Errorf("values %q: agent's cluster-wide rules (-want +got):\n%s", values, diff)
		}
		if len(g.byNamespace) != 0 {
			t.Errorf("agent has namespaced rules: %v", g.byNamespace)
		}
	}
	off := mustRender(t, valueSets["agent off"])
	if g := grantsOf(t, off, AgentServiceAccount); len(g.cluster) != 0 {
		t.Errorf("agent off, but agent rules remain: %v", g.cluster)
	}
}

// kindResources maps the kinds the vCluster chart renders to their resources and scope.
var kindResources = map[string]struct {
	group, resource string
	clusterScoped   bool
}{
	"ServiceAccount":     {"", "serviceaccounts", false},
	"Secret":             {"", "secrets", false},
	"ConfigMap":          {"", "configmaps", false},
	"Service":            {"", "services", false},
	"Role":               {"rbac.authorization.k8s.io", "roles", false},
	"RoleBinding":        {"rbac.authorization.k8s.io", "rolebindings", false},
	"ClusterRole":        {"rbac.authorization.k8s.io", "clusterroles", true},
	"ClusterRoleBinding": {"rbac.authorization.k8s.io", "clusterrolebindings", true},
	"StatefulSet":        {"apps", "statefulsets", false},
	"Deployment":         {"apps", "deployments", false},
}

// vclusterSpecs are the releases the manager installs: the reconciler's values for a
// team (persistent and ephemeral datastore, with and without a control-plane pool,
// with and without --sync-real-nodes, which adds vCluster's ClusterRole).
func vclusterSpecs(src vclusters.ChartSource) map[string]vclusters.Spec {
	base := vclusters.Spec{
		Name: "fraud", Namespace: teamNS, Pool: "a100", ContextName: "fraud",
		KubeconfigServer: "https://fraud." + teamNS + ".svc", Chart: src,
	}
	ephemeral := base
	ephemeral.Persistence.Ephemeral = true
	pinned := base
	pinned.ControlPlanePool = "system"
	realNodes := base
	realNodes.SyncRealNodes = true
	realNodesEphemeral := ephemeral
	realNodesEphemeral.SyncRealNodes = true
	return map[string]vclusters.Spec{
		"persistent": base, "ephemeral": ephemeral, "control-plane pool": pinned,
		"real nodes": realNodes, "real nodes, ephemeral": realNodesEphemeral,
	}
}

// TestManagerRBACCoversVClusterChart renders vCluster's chart (v0.36.1, from the Go
// module cache) as the manager installs it and checks that the manager may create,
// read, update and delete every object in it, and holds every permission its Role and
// ClusterRole grant — without which the API server refuses them (RBAC escalation
// prevention). TestInstallAsManager repeats this against a real API server.
func TestManagerRBACCoversVClusterChart(t *testing.T) {
	ctx := context.Background()
	src, err := vclusterstest.ChartSource(ctx)
	if err != nil {
		t.Fatalf("the vCluster chart from the module cache: %v", err)
	}
	for name, spec := range vclusterSpecs(src) {
		t.Run(name, func(t *testing.T) {
			values := ""
			if spec.SyncRealNodes {
				values = valueSets["real nodes"]
			}
			g := grantsOf(t, mustRender(t, values), ManagerServiceAccount)
			objs, err := renderVCluster(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) < 5 {
				t.Fatalf("vCluster chart rendered only %v", objs.ids())
			}
			for _, u := range objs {
				kr, ok := kindResources[u.GetKind()]
				if !ok {
					t.Errorf("vCluster renders a %s, which this test (and maybe the manager's RBAC) does not know", u.GetKind())
					continue
				}
				ns := spec.Namespace
				if kr.clusterScoped {
					ns = ""
				}
				// Helm reads an object before creating or upgrading it, patches it on
				// upgrade and deletes it on uninstall.
				for _, v := range []string{"get", "create", "patch", "update", "delete"} {
					if !allows(g.in(ns), v, kr.group, kr.resource, u.GetName()) {
						t.Errorf("manager may not %s %s %s (vCluster chart)", v, u.GetKind(), u.GetName())
					}
				}
				switch u.GetKind() {
				case "Role":
					for _, rule := range rulesOf(t, u) {
						if missing := covers(g.in(spec.Namespace), rule); len(missing) > 0 {
							t.Errorf("vCluster's Role %s grants what the manager lacks in %s: %v", u.GetName(), spec.Namespace, missing)
						}
					}
				case "ClusterRole":
					for _, rule := range rulesOf(t, u) {
						if missing := covers(g.cluster, rule); len(missing) > 0 {
							t.Errorf("vCluster's ClusterRole %s grants what the manager lacks cluster-wide: %v", u.GetName(), missing)
						}
					}
				}
			}
		})
	}
}

// renderVCluster renders vCluster's chart with the values the manager installs
// (vclusters.HelmValues) for the Kubernetes version of the tests: its Role depends on
// the version (pods/resize from 1.35 on), which vclusters.Render leaves at Helm's
// client-only default.
func renderVCluster(ctx context.Context, spec vclusters.Spec) (manifests, error) {
	vals, err := vclusters.HelmValues(spec)
	if err != nil {
		return nil, err
	}
	ch, err := loader.Load(spec.Chart.Dir)
	if err != nil {
		return nil, err
	}
	ch.Metadata.Version = spec.Chart.Version
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly = true, true
	inst.ReleaseName, inst.Namespace = spec.Name, spec.Namespace
	inst.KubeVersion = testKubeVersion
	rel, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, err
	}
	return parseManifests(rel.Manifest)
}

func rulesOf(t *testing.T, u *unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	r := &rbacv1.ClusterRole{}
	raw, _, _ := unstructured.NestedSlice(u.Object, "rules")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"rules": raw}, r); err != nil {
		t.Fatalf("%s %s rules: %v", u.GetKind(), u.GetName(), err)
	}
	return r.Rules
}
