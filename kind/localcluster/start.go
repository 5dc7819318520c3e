package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// starter carries a control plane through Start's steps; each step fills in
// what the later ones need.
type starter struct {
	cp   *ControlPlane
	opts Options

	etcdPort, peerPort, apiPort, kwokPort int
}

// steps are Start's steps for s.opts, in order: the folder, the binaries, the
// ports, the certificates and kubeconfigs (no process yet), then each process
// started and waited for; with APIOnly it ends at the API server.
func (s *starter) steps() []bringup.Step {
	steps := []bringup.Step{
		{Name: "prepare the folder", Run: s.prepareDir},
		{Name: "find the binaries", Run: s.findBinaries},
		{Name: "choose the ports", Run: s.choosePorts},
		{Name: "generate the PKI", Run: s.generatePKI},
		{Name: "write the kubeconfigs", Run: s.writeKubeconfigs},
		{Name: "start " + string(Etcd), Run: s.startEtcd},
		{Name: "wait for " + string(Etcd), Run: s.waitEtcd},
		{Name: "start " + string(APIServer), Run: s.startAPIServer},
		{Name: "wait for " + string(APIServer), Run: s.cp.waitAPIServer},
	}
	if s.opts.APIOnly {
		return steps
	}
	return append(steps,
		bringup.Step{Name: "start " + string(ControllerManager), Run: s.startControllerManager},
		bringup.Step{Name: "start " + string(Scheduler), Run: s.startScheduler},
		bringup.Step{Name: "start " + string(Kwok), Run: s.startKwok},
		bringup.Step{Name: "wait for " + string(ControllerManager) + " and " + string(Scheduler), Run: s.waitControllers},
		bringup.Step{Name: "add the kwok nodes", Run: s.addNodes},
		bringup.Step{Name: "wait for the default ServiceAccount", Run: s.waitServiceAccount},
	)
}

// prepareDir makes a temporary folder when Options name none (Stop removes
// it), and the logs folder.
func (s *starter) prepareDir(context.Context) (err error) {
	if s.cp.Dir == "" {
		if s.cp.Dir, err = os.MkdirTemp("", "gpuvc-localcp-"); err != nil {
			return err
		}
		s.cp.removeDir = true
	}
	return os.MkdirAll(filepath.Join(s.cp.Dir, "logs"), 0o755)
}

// findBinaries takes Options.Binaries, else the manifest's.
func (s *starter) findBinaries(context.Context) error {
	if s.cp.Binaries = s.opts.Binaries; s.cp.Binaries != nil {
		return nil
	}
	m, err := LoadManifest()
	if err != nil {
		return err
	}
	s.cp.Binaries, err = m.ControlPlane()
	return err
}

// choosePorts picks free loopback ports; with NodeIP (and no APIPort) the API
// server gets its usual port, held by a machine-wide lock.
func (s *starter) choosePorts(ctx context.Context) error {
	ports, err := FreePorts(6)
	if err != nil {
		return err
	}
	s.etcdPort, s.peerPort, s.apiPort, s.kwokPort = ports[0], ports[1], ports[2], ports[5]
	s.cp.kcmPort, s.cp.schedPort = ports[3], ports[4]
	if s.opts.APIPort != 0 {
		s.apiPort = s.opts.APIPort
	} else if s.opts.NodeIP != nil {
		if s.cp.nodeIPLock, err = LockExclusive(ctx, nodeIPLock, "another control plane for a real node runs on this machine"); err != nil {
			return err
		}
		// Pods reach the API server at its endpoint's port once kube-proxy has
		// translated the Service address, and NetworkPolicies (gpuvc's for vCluster
		// control planes among them) allow the API server's usual port, as on
		// kubeadm clusters.
		if s.apiPort, err = portFree(nodeAPIPort); err != nil {
			return err
		}
	}
	s.cp.Server = "https://127.0.0.1:" + strconv.Itoa(s.apiPort)
	return nil
}

// generatePKI writes the CA and the serving and client certificates, with the
// API server's client certificate for kubelets when a real node joins.
func (s *starter) generatePKI(context.Context) (err error) {
	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}, s.opts.ExtraSANs...)
	if s.opts.NodeIP != nil {
		ips = append(ips, s.opts.NodeIP)
	}
	if s.cp.PKI, err = newPKI(filepath.Join(s.cp.Dir, "pki"), ips, apiServerNames); err != nil {
		return fmt.Errorf("generating PKI: %w", err)
	}
	if s.opts.NodeIP != nil {
		// As kubeadm's apiserver-kubelet-client: a group the default RBAC lets use
		// every kubelet API (the kubelets authorize through a webhook).
		return s.cp.PKI.WriteClientCert(kubeletClientCert, kubeletClientCert, "system:masters")
	}
	return nil
}

// writeKubeconfigs writes the admin's and the components' kubeconfigs and
// builds the admin client.
func (s *starter) writeKubeconfigs(context.Context) (err error) {
	cp := s.cp
	cp.Kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	for user, path := range map[string]string{
		"admin":                   cp.Kubeconfig,
		"kube-controller-manager": cp.kubeconfigPath(ControllerManager),
		"kube-scheduler":          cp.kubeconfigPath(Scheduler),
		"kwok":                    cp.kubeconfigPath(Kwok),
	} {
		if err := writeKubeconfig(cp.PKI, cp.Server, user, path); err != nil {
			return err
		}
	}
	if cp.Config, err = clientcmd.BuildConfigFromFlags("", cp.Kubeconfig); err != nil {
		return err
	}
	cp.Config.QPS, cp.Config.Burst = 100, 200
	cp.Client, err = kubernetes.NewForConfig(cp.Config)
	return err
}

// start runs a component (detached with Options.Detached) and records its pid
// in the state file.
func (s *starter) start(c Component, bin string, args []string) error {
	p, err := supervise.Start(string(c), bin, args, nil, filepath.Join(s.cp.Dir, "logs"), s.opts.Detached)
	if err != nil {
		return err
	}
	s.cp.procs = append(s.cp.procs, p)
	return s.cp.writeState()
}

func (s *starter) startEtcd(context.Context) error {
	return s.start(Etcd, s.cp.Binaries.Etcd, etcdArgs(s.cp.Dir, s.etcdPort, s.peerPort))
}

func (s *starter) waitEtcd(ctx context.Context) error {
	return s.cp.waitHTTP(ctx, Etcd, fmt.Sprintf("http://127.0.0.1:%d/health", s.etcdPort))
}

func (s *starter) startAPIServer(context.Context) error {
	s.cp.apiArgs = append(apiServerArgs(s.cp.PKI, s.etcdPort, s.apiPort, s.opts.NodeIP), s.opts.ExtraAPIServerArgs...)
	return s.start(APIServer, s.cp.Binaries.APIServer, s.cp.apiArgs)
}

func (s *starter) startControllerManager(context.Context) error {
	return s.start(ControllerManager, s.cp.Binaries.ControllerManager, controllerManagerArgs(s.cp, s.cp.kcmPort))
}

func (s *starter) startScheduler(context.Context) error {
	return s.start(Scheduler, s.cp.Binaries.Scheduler, schedulerArgs(s.cp, s.cp.schedPort))
}

// startKwok writes kwok's stages (from the manifest) and starts it.
func (s *starter) startKwok(context.Context) error {
	stages, err := writeKwokStages(s.cp.Dir)
	if err != nil {
		return err
	}
	return s.start(Kwok, s.cp.Binaries.Kwok, kwokArgs(s.cp, stages, s.kwokPort))
}

func (s *starter) waitControllers(ctx context.Context) error {
	for _, c := range []struct {
		c    Component
		port int
	}{{ControllerManager, s.cp.kcmPort}, {Scheduler, s.cp.schedPort}} {
		if err := s.cp.waitHTTP(ctx, c.c, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.port)); err != nil {
			return err
		}
	}
	return nil
}

// addNodes creates the kwok nodes of Options.Pools (nil: nodepool.Default())
// and waits until they are Ready.
func (s *starter) addNodes(ctx context.Context) error {
	pools := s.opts.Pools
	if pools == nil {
		pools = nodepool.Default()
	}
	return s.cp.AddNodes(ctx, pools)
}

// waitServiceAccount waits for the default ServiceAccount, without which the
// API server refuses pods.
func (s *starter) waitServiceAccount(ctx context.Context) error {
	return s.cp.WaitForServiceAccount(ctx, "default", "default")
}
