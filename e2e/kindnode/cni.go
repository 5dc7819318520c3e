package kindnode

// defaultCNIManifest is the node image's /kind/manifests/default-cni.yaml: the
// pod network and the NetworkPolicy controller.
func defaultCNIManifest() string {
	return cniManifest(toolsRef) + "---\n" + netpolManifest(toolsRef)
}

// cniManifest is the node's pod network, applied by kind after `kubeadm init`
// (kind's own kindnetd image cannot be pulled here).
// A DaemonSet on every node writes a bridge + host-local configuration for the
// node's pod CIDR and routes every other node's pod CIDR via that node's
// address, so pods reach each other across the kind network. It talks to the API
// server at the address kind patches in (kindPatchMarker asks kind to add
// CONTROL_PLANE_ENDPOINT), since Service IPs need kube-proxy, which waits for
// nothing but may not be up yet. It does not enforce NetworkPolicy (netpolManifest
// does).
func cniManifest(toolsRef string) string {
	return kindPatchMarker + nodeDaemon("gpuvc-kind-cni", cniRules, cniScript, cniContainers(toolsRef))
}

// kindPatchMarker asks kind to add CONTROL_PLANE_ENDPOINT to the first container
// of every DaemonSet of the manifest; it must be the manifest's first line.
const kindPatchMarker = "# would you kindly patch this file (kind adds CONTROL_PLANE_ENDPOINT)\n"

// cniRules let the CNI DaemonSet read the nodes' pod CIDRs and addresses.
const cniRules = `- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list]
`

// cniScript writes the node's CNI configuration and the routes to the other
// nodes' pod CIDRs, every 5 s.
const cniScript = `apiVersion: v1
kind: ConfigMap
metadata:
  name: gpuvc-kind-cni
  namespace: kube-system
data:
  run.sh: |
    set -u
    sa=/var/run/secrets/kubernetes.io/serviceaccount
    k() { kubectl --server="https://${CONTROL_PLANE_ENDPOINT}" --token="$(cat $sa/token)" --certificate-authority=$sa/ca.crt "$@"; }
    conf=/etc/cni/net.d/10-gpuvc-kind.conflist
    while true; do
      cidr=$(k get node "$NODE_NAME" -o 'jsonpath={.spec.podCIDR}' 2>/dev/null)
      if [ -n "$cidr" ]; then
        want='{"cniVersion":"1.0.0","name":"gpuvc-kind","plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,"ipMasq":false,"hairpinMode":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"'"$cidr"'"}]],"routes":[{"dst":"0.0.0.0/0"}]}},{"type":"portmap","capabilities":{"portMappings":true}}]}'
        if [ "$(cat $conf 2>/dev/null)" != "$want" ]; then
          printf '%s' "$want" > $conf.tmp && mv $conf.tmp $conf && echo "wrote $conf for $cidr"
        fi
        k get nodes -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' |
        while read -r name podcidr ip; do
          if [ "$name" != "$NODE_NAME" ] && [ -n "$podcidr" ] && [ -n "$ip" ]; then
            ip route replace "$podcidr" via "$ip" || echo "route $podcidr via $ip failed"
          fi
        done
      fi
      sleep 5
    done
---
`

func cniContainers(toolsRef string) string {
	return `      containers:
      - name: cni
        image: ` + toolsRef + `
        imagePullPolicy: Never
        command: [/bin/sh, /etc/gpuvc-kind-cni/run.sh]
        env:
        - name: NODE_NAME
          valueFrom:
            fieldRef:
              fieldPath: spec.nodeName
        securityContext:
          privileged: true
        resources:
          requests:
            cpu: 10m
            memory: 20Mi
        volumeMounts:
        - name: cni-conf
          mountPath: /etc/cni/net.d
        - name: script
          mountPath: /etc/gpuvc-kind-cni
      volumes:
      - name: cni-conf
        hostPath:
          path: /etc/cni/net.d
          type: DirectoryOrCreate
      - name: script
        configMap:
          name: gpuvc-kind-cni
`
}
