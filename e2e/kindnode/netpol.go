package kindnode

// netpolManifest runs kube-router's NetworkPolicy controller alone (no routing,
// no service proxy: the CNI DaemonSet routes, kube-proxy proxies) on every node,
// as the real local node runs it (kind/localnode), so team isolation is enforced
// on kind as it is there; the bridge CNI enforces nothing and kindnetd, which
// does, cannot be pulled. It is a DaemonSet in the manifest kind applies rather
// than a unit in the node image: kind's nodes have no credentials a policy
// controller may use (the kubelet's node identity may not list NetworkPolicies
// or Namespaces), and as a DaemonSet it gets a ServiceAccount of its own, starts
// on every node that joins, and its logs and readiness are kubectl's. It talks
// to the API server at CONTROL_PLANE_ENDPOINT (kind patches it into the first
// container of every DaemonSet of the manifest), so it does not wait for
// kube-proxy's Service routing. Its iptables (nft) and ipset are the tools
// image's, the same iptables kube-proxy's rules are written with.
func netpolManifest(toolsRef string) string {
	return nodeDaemon("gpuvc-kind-netpol", netpolRules, "", netpolContainers(toolsRef))
}

// netpolRules let kube-router read what NetworkPolicies select and record events.
const netpolRules = `- apiGroups: [""]
  resources: [namespaces, pods, services, endpoints, nodes]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch, update]
`

func netpolContainers(toolsRef string) string {
	return `      containers:
      - name: kube-router
        image: ` + toolsRef + `
        imagePullPolicy: Never
        # The in-cluster client reads the API server's address from these two
        # variables: the control plane's, not the kubernetes Service's.
        command:
        - /bin/sh
        - -c
        - >-
          export KUBERNETES_SERVICE_HOST="${CONTROL_PLANE_ENDPOINT%:*}" KUBERNETES_SERVICE_PORT="${CONTROL_PLANE_ENDPOINT##*:}";
          exec kube-router --run-firewall=true --run-router=false --run-service-proxy=false
          --hostname-override="$NODE_NAME" --enable-ipv4=true --enable-ipv6=false
          --health-port=` + netpolHealthPort + ` --metrics-port=0
        env:
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        readinessProbe:
          httpGet:
            path: /healthz
            port: ` + netpolHealthPort + `
          periodSeconds: 10
        securityContext:
          privileged: true
        resources:
          requests:
            cpu: 10m
            memory: 50Mi
        volumeMounts:
        - name: xtables-lock
          mountPath: /run/xtables.lock
      volumes:
      - name: xtables-lock
        hostPath:
          path: /run/xtables.lock
          type: FileOrCreate
`
}

// netpolHealthPort is kube-router's health port on each node (its default).
const netpolHealthPort = "20244"
