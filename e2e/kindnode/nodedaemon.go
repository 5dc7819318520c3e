package kindnode

// nodeDaemon is the frame both DaemonSets of the default CNI manifest share,
// named name in kube-system: a ServiceAccount, a ClusterRole of rules bound to
// it, then (after between, e.g. a ConfigMap) the DaemonSet down to its
// containers: host network, Docker's embedded DNS, that ServiceAccount,
// system-node-critical, every taint tolerated (the control plane and the GPU
// pools are tainted). podTail is the pod spec from `containers:` on, indented as
// the pod spec.
func nodeDaemon(name, rules, between, podTail string) string {
	return `apiVersion: v1
kind: ServiceAccount
metadata:
  name: ` + name + `
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: ` + name + `
rules:
` + rules + `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ` + name + `
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ` + name + `
subjects:
- kind: ServiceAccount
  name: ` + name + `
  namespace: kube-system
---
` + between + `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ` + name + `
  namespace: kube-system
  labels:
    app: ` + name + `
spec:
  selector:
    matchLabels:
      app: ` + name + `
  template:
    metadata:
      labels:
        app: ` + name + `
    spec:
      hostNetwork: true
      # Docker's embedded DNS resolves the control plane's name in the node's
      # network namespace, which this pod shares.
      dnsPolicy: None
      dnsConfig:
        nameservers: [127.0.0.11]
      serviceAccountName: ` + name + `
      priorityClassName: system-node-critical
      tolerations:
      - operator: Exists
` + podTail
}
