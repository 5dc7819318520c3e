package localcluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

const (
	serviceCIDR = "10.96.0.0/12"
	serviceIP   = "10.96.0.1" // the `kubernetes` Service's ClusterIP
	podCIDR     = "10.244.0.0/16"
)

var apiServerNames = []string{
	"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local",
}

func etcdArgs(dir string, clientPort, peerPort int) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	return []string{
		"--name=localcp",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=localcp=" + peer,
		// Test data need not survive a power cut; skipping fsync makes writes fast.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
}

// apiServerArgs are kube-apiserver's flags. With a nodeIP the API server serves pods
// on a real worker node: it listens on every address, advertises nodeIP as the
// `kubernetes` Service's endpoint (kept by the lease reconciler) and presents a
// client certificate to kubelets, so logs, exec and port-forward work.
func apiServerArgs(p *PKI, etcdPort, port int, nodeIP net.IP) []string {
	bind, advertise := "127.0.0.1", "127.0.0.1"
	// The default reconciler keeps rewriting the kubernetes Endpoints for a
	// loopback advertise address and complains every 10 s.
	reconciler := "none"
	if nodeIP != nil {
		bind, advertise, reconciler = "0.0.0.0", nodeIP.String(), "lease"
	}
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=" + bind,
		"--advertise-address=" + advertise,
		"--secure-port=" + strconv.Itoa(port),
		"--endpoint-reconciler-type=" + reconciler,
		"--tls-cert-file=" + p.Path("apiserver.crt"),
		"--tls-private-key-file=" + p.Path("apiserver.key"),
		"--client-ca-file=" + p.Path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.Path("sa.pub"),
		"--service-account-signing-key-file=" + p.Path("sa.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,LimitRanger,ResourceQuota,PodSecurity",
		"--allow-privileged=true",
		// Aggregation-layer (front proxy) settings; the controller manager and the
		// scheduler read them to authenticate delegated requests.
		"--requestheader-client-ca-file=" + p.Path("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + p.Path("front-proxy-client.crt"),
		"--proxy-client-key-file=" + p.Path("front-proxy-client.key"),
		"--profiling=false",
	}
	if nodeIP != nil {
		args = append(args,
			// By default the API server dials a kubelet by host name first, which
			// would be a DNS query leaving this machine.
			"--kubelet-preferred-address-types=InternalIP",
			"--kubelet-client-certificate="+p.Path(kubeletClientCert+".crt"),
			"--kubelet-client-key="+p.Path(kubeletClientCert+".key"),
		)
	}
	return args
}

func controllerManagerArgs(cp *ControlPlane, port int) []string {
	return append(controllerArgs(cp, ControllerManager, port, "kcm-serving"),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+cp.PKI.Path("sa.key"),
		"--root-ca-file="+cp.PKI.Path("ca.crt"),
		"--cluster-signing-cert-file="+cp.PKI.Path("ca.crt"),
		"--cluster-signing-key-file="+cp.PKI.Path("ca.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--cluster-cidr="+podCIDR,
	)
}

func schedulerArgs(cp *ControlPlane, port int) []string {
	return controllerArgs(cp, Scheduler, port, "scheduler-serving")
}

// controllerArgs are the flags the controller manager and the scheduler share:
// the component's kubeconfig for the API server and for delegated authn/authz,
// a loopback-only secure port serving from certDir, no leader election (one
// instance), no profiling.
func controllerArgs(cp *ControlPlane, c Component, port int, certDir string) []string {
	kc := cp.kubeconfigPath(c)
	return []string{
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(cp.Dir, certDir),
		"--leader-elect=false",
		"--profiling=false",
	}
}

func kwokArgs(cp *ControlPlane, stages string, port int) []string {
	return []string{
		"--kubeconfig=" + cp.kubeconfigPath(Kwok),
		"--config=" + stages,
		// Only the fake nodes: a real kubelet joining later keeps its own node.
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		// Heartbeats through node leases, as kubelets do; without leases the node
		// lifecycle controller marks every fake node's pods NotReady after ~40 s.
		"--node-lease-duration-seconds=40",
		"--cidr=10.250.0.0/16",
		"--node-ip=127.0.0.1",
		fmt.Sprintf("--server-address=127.0.0.1:%d", port),
	}
}
