package localaddons

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// ProvisionerTool is the manifest name of the provisioner's binary (e2e/localcp
// builds it; metrics-server's goes into an image: images.MetricsServer).
const ProvisionerTool = localcluster.LocalPathProvisionerTool

// Options configure Start.
type Options struct {
	// Dir holds the add-ons' logs, pid files and the volumes' directories.
	// Required; Start creates it.
	Dir string
	// Node is the real node's name: the provisioner puts every volume there.
	Node string
	// Provisioner is the provisioner's binary; empty: the manifest's.
	Provisioner string
	// HelperImage is the image of the provisioner's helper pods (busybox with
	// sh, mkdir, chmod, rm); DNSImage is CoreDNS's, MetricsImage
	// metrics-server's. All must be on the node already (never pulled).
	HelperImage, DNSImage, MetricsImage string
	// Detached lets the processes outlive this program (a developer's cluster,
	// the trial); StopDetached stops them later.
	Detached bool
	// Log receives progress lines. Nil discards them.
	Log io.Writer
}

// Addons are the running add-ons.
type Addons struct {
	procs []*supervise.Process
}

// Start installs the default StorageClass, cluster DNS and the Metrics API
// into cp: it starts the provisioner as a process and CoreDNS and
// metrics-server as pods on the node, waiting until each is ready: the
// provisioner's controller runs, kube-dns answers, the Metrics API answers
// through the API server. On error no process it started is left running (the
// objects go with the cluster).
func Start(ctx context.Context, cp *localcluster.ControlPlane, opts Options) (a *Addons, err error) {
	if opts.Dir == "" || opts.Node == "" || opts.HelperImage == "" || opts.DNSImage == "" || opts.MetricsImage == "" {
		return nil, errors.New("localaddons: Options.Dir, Node, HelperImage, DNSImage and MetricsImage are required")
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if err := resolveBinaries(&opts); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	a = &Addons{}
	defer func() {
		if err != nil {
			err = errors.Join(err, a.Stop())
			a = nil
		}
	}()
	if err := a.startStorage(ctx, cs, cp, opts); err != nil {
		return a, fmt.Errorf("storage (local-path-provisioner %s): %w", localcluster.LocalPathProvisionerVersion, err)
	}
	if err := startDNS(ctx, cs, opts); err != nil {
		return a, fmt.Errorf("cluster DNS (CoreDNS %s): %w", localcluster.CoreDNSVersion, err)
	}
	if err := startMetrics(ctx, cs, cp, opts); err != nil {
		return a, fmt.Errorf("metrics (metrics-server %s): %w", localcluster.MetricsServerVersion, err)
	}
	fmt.Fprintf(log, "localaddons: default StorageClass %q (local-path-provisioner %s), cluster DNS at %s (CoreDNS %s) and the Metrics API (metrics-server %s) ready in %v (logs in %s)\n",
		StorageClass, localcluster.LocalPathProvisionerVersion, DNSServiceIP, localcluster.CoreDNSVersion, localcluster.MetricsServerVersion, time.Since(began).Round(time.Millisecond), opts.Dir)
	return a, nil
}

func resolveBinaries(opts *Options) error {
	if opts.Provisioner != "" {
		return nil
	}
	m, err := localcluster.LoadManifest()
	if err != nil {
		return err
	}
	opts.Provisioner, err = m.Tool(ProvisionerTool)
	return err
}

// start starts one add-on process and, detached, records its pid for
// StopDetached.
func (a *Addons) start(name, bin string, args []string, opts Options) (*supervise.Process, error) {
	p, err := supervise.Start(name, bin, args, nil, opts.Dir, opts.Detached)
	if err != nil {
		return nil, err
	}
	a.procs = append(a.procs, p)
	if opts.Detached {
		if err := os.WriteFile(pidFile(opts.Dir, name), []byte(strconv.Itoa(p.PID())), 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// PIDs are the add-ons' process ids by name.
func (a *Addons) PIDs() map[string]int {
	out := map[string]int{}
	for _, p := range a.procs {
		out[p.Name] = p.PID()
	}
	return out
}

// Stop stops the add-on processes Start started (the objects and pods stay:
// they go with the cluster and its node).
func (a *Addons) Stop() error {
	if a == nil {
		return nil
	}
	var errs []error
	for _, p := range a.procs {
		errs = append(errs, p.Stop(10*time.Second))
	}
	return errors.Join(errs...)
}

func pidFile(dir, name string) string { return filepath.Join(dir, name+".pid") }

// StopDetached stops the add-ons a detached Start left running from dir;
// none: nothing to do.
func StopDetached(dir string) error {
	var errs []error
	// metrics-server ran as a process here before it became a pod: a stack
	// brought up then is still taken down.
	for _, name := range []string{provisionerProcess, "metrics-server"} {
		b, err := os.ReadFile(pidFile(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", pidFile(dir, name), err))
			continue
		}
		errs = append(errs, supervise.StopPID(pid, 10*time.Second))
	}
	return errors.Join(errs...)
}
