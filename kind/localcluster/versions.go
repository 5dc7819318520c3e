package localcluster

// Versions of the components the local cluster runs; the builder's wrapper
// modules (e2e/localcp/tools) pin the same versions.
const (
	KubernetesVersion = "v1.36.3"
	EtcdVersion       = "v3.6.16"
	KwokVersion       = "v0.8.0"
	ContainerdVersion = "v2.4.2"
	KubeRouterVersion = "v2.1.0"
	VClusterVersion   = "v0.36.1"
	KineVersion       = "v0.17.5"
	CoreDNSVersion    = "v1.14.2"
	// KueueVersion: v0.17.0 is the newest the module proxy serves (v0.16.0 and
	// v0.18.0 are refused); it builds at its own k8s.io v0.35 pins, as a separate binary.
	KueueVersion = "v0.17.0"
	// LocalPathProvisionerVersion: rancher's dynamic provisioner, the one kind
	// ships; v0.0.30 is the only recent version the module proxy serves here
	// (v0.0.26, v0.0.28, v0.0.29, v0.0.31 and v0.0.32 are refused).
	LocalPathProvisionerVersion = "v0.0.30"
	// MetricsServerVersion: the Metrics API behind `kubectl top`.
	MetricsServerVersion = "v0.8.0"
)

// Manifest names of the host add-ons' binaries (e2e/localcp builds them).
const (
	LocalPathProvisionerTool = "local-path-provisioner"
	MetricsServerTool        = "metrics-server"
)

// Binaries are the paths of the executables a control plane is made of.
type Binaries struct {
	Etcd              string
	APIServer         string
	ControllerManager string
	Scheduler         string
	Kubectl           string
	Kwok              string
}

// NodeBinaries are the executables of a real worker node.
type NodeBinaries struct {
	Kubelet, KubeProxy, Containerd, ContainerdShim, Ctr, KubeRouter string
}

// ImageBinaries go into the container images of vCluster's control plane. All are
// statically linked: the images carry no libc.
type ImageBinaries struct {
	VCluster, Kine, CoreDNS string
}
