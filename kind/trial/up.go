package trial

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/podstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// vCluster's annotations on a host pod naming the virtual pod it stands for.
const (
	vclusterNameAnnotation      = "vcluster.loft.sh/name"
	vclusterNamespaceAnnotation = "vcluster.loft.sh/namespace"
)

// Result is what Up ran and where it landed.
type Result struct {
	Cluster *Cluster
	Nodes   []NodeGPUs // the cluster's pool nodes and their GPUs
	Teams   []TeamResult
	// WorkloadImage is the demo pods' busybox image: the report suggests
	// running a web server from it and fetching its page from a demo pod.
	WorkloadImage string
}

// NodeGPUs is a node and the GPU resources its kubelet advertises.
type NodeGPUs struct {
	Pool, Node string
	// GPUs lists the node's allocatable nvidia.com/ resources, e.g.
	// "nvidia.com/gpu: 4, nvidia.com/mig-1g.10gb: 8".
	GPUs string
}

// TeamResult is one demo team: how to reach it and its pods.
type TeamResult struct {
	Name, Pool string
	// Command is the `gpuvc team create` line making the same Team.
	Command string
	// Kubeconfig is where Up wrote the team's kubeconfig; Server is its URL.
	Kubeconfig, Server string
	Pods               []Placement
}

// Placement is where a virtual pod landed on the host.
type Placement struct {
	Pod  string // name in the virtual cluster (namespace default)
	Asks string // the GPU request the team member wrote
	// HostPod is namespace/name of the pod vCluster created on the host.
	HostPod string
	Node    string
	// HostGPU is what the host pod holds after gpuvc's webhook: its nvidia.com/
	// limits, its share of a GPU reserved for the team, or the DRA devices
	// allocated to its claims.
	HostGPU string
	// Devices is NVIDIA_VISIBLE_DEVICES as the container saw it: the simulated
	// device plugin's allocation, the share controller's for fractions, or the
	// DRA driver's (its CDI spec) for claims.
	Devices string
}

// Up runs the whole trial: Start, then the demo teams (DemoTeams) created and
// waited for until Ready, then their pods created through each team's own
// kubeconfig and followed until they run on the host. It can be run again: what
// exists is kept.
func Up(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	log := newProgress(opts.Log)
	c, err := start(ctx, opts, log)
	if err != nil {
		return nil, err
	}
	return runDemo(ctx, c, DemoTeams(opts.WorkloadImage), opts, log)
}

// runDemo creates the demo teams on a cluster with gpuvc installed, waits until
// they are Ready, then creates their pods through each team's own kubeconfig and
// follows them until they run on the host.
func runDemo(ctx context.Context, c *Cluster, demo []DemoTeam, opts Options, log *progress) (*Result, error) {
	res := &Result{Cluster: c, Nodes: c.GPUs}
	if len(demo) > 0 && len(demo[0].Pods) > 0 {
		res.WorkloadImage = demo[0].Pods[0].Spec.Containers[0].Image
	}
	tc, err := teamctl.New(c.Config)
	if err != nil {
		return res, err
	}
	for _, d := range demo {
		r, err := tc.Apply(ctx, d.Team)
		if err != nil {
			return res, err
		}
		log.printf("team %s %s (as `%s`)", d.Team.Name, r, CreateCommand(d.Team))
	}
	for _, d := range demo {
		name := d.Team.Name
		_, err := tc.WaitReady(ctx, name, opts.Timeout, func(e teamctl.Event) {
			if c := e.Condition; c != nil {
				log.printf("team %s: %s=%s %s %s", name, c.Type, c.Status, c.Reason, c.Message)
				return
			}
			log.printf("team %s: %s", name, e.Note)
		})
		if err != nil && !c.Local {
			return res, fmt.Errorf("%w (vCluster's images are pulled from public registries on first use)", err)
		}
		if err != nil {
			return res, err
		}
		log.printf("team %s is Ready", name)
	}
	for _, d := range demo {
		tr, err := runDemoPods(ctx, c, tc, d, opts, log)
		res.Teams = append(res.Teams, tr)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// waitGPUs waits until every GPU node advertises the resources of its pool (the
// simulated device plugin registered with the kubelet) and returns them.
func waitGPUs(ctx context.Context, cs kubernetes.Interface, pools []nodepool.Pool, timeout time.Duration, log *progress) ([]NodeGPUs, error) {
	var out []NodeGPUs
	for _, p := range pools {
		for _, n := range p.Nodes {
			want := gpuList(n.Capacity())
			var got string
			err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
				node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				alloc := map[string]string{}
				for k, v := range node.Status.Allocatable {
					alloc[string(k)] = v.String()
				}
				if now := gpuList(alloc); now != got {
					got = now
					if want != "" {
						log.printf("node %s advertises [%s], waiting for [%s]", n.Name, got, want)
					}
				}
				return got == want, nil
			})
			if err != nil {
				return out, fmt.Errorf("node %s advertises [%s], not the simulated [%s]: is the gpuvc-agent-%s DaemonSet running there? (%w)", n.Name, got, want, p.Name, err)
			}
			out = append(out, NodeGPUs{Pool: p.Name, Node: n.Name, GPUs: got})
		}
	}
	return out, nil
}

// gpuList renders the nvidia.com/ entries of a resource map, sorted, non-zero.
func gpuList(res map[string]string) string {
	var out []string
	for k, v := range res {
		if strings.HasPrefix(k, "nvidia.com/") && v != "0" {
			out = append(out, k+": "+v)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func teamKubeconfigPath(dir, team string) string { return filepath.Join(dir, team+".kubeconfig") }

// runDemoPods writes the team's kubeconfig, creates its demo pods in its virtual
// cluster through it, and follows each to its host pod.
func runDemoPods(ctx context.Context, c *Cluster, tc *teamctl.Client, d DemoTeam, opts Options, log *progress) (TeamResult, error) {
	t := d.Team
	tr := TeamResult{Name: t.Name, Pool: t.Spec.Pool, Command: CreateCommand(t), Kubeconfig: teamKubeconfigPath(opts.Dir, t.Name)}
	kc, err := tc.Kubeconfig(ctx, t.Name, "")
	if err != nil {
		return tr, err
	}
	if err := os.WriteFile(tr.Kubeconfig, kc, 0o600); err != nil {
		return tr, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return tr, fmt.Errorf("team %s kubeconfig: %w", t.Name, err)
	}
	tr.Server = cfg.Host
	if err := reachable(ctx, t.Name, cfg.Host, log); err != nil {
		return tr, err
	}
	cfg.Timeout = 15 * time.Second
	vc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return tr, err
	}
	for _, tmpl := range d.ClaimTemplates {
		if err := createVirtualTemplate(ctx, c.Client, vc, t.Name, tmpl, opts.Timeout, log); err != nil {
			return tr, err
		}
	}
	for _, p := range d.Pods {
		if err := createVirtualPod(ctx, vc, t.Name, tr.Server, p, opts.Timeout, log); err != nil {
			return tr, err
		}
	}
	for _, p := range d.Pods {
		pl, hp, err := followPod(ctx, c.Client, vc, t.Name, p, opts.Timeout, log)
		if err == nil {
			pl.Devices = visibleDevices(ctx, c.Client, hp)
		}
		tr.Pods = append(tr.Pods, pl)
		if err != nil {
			return tr, err
		}
	}
	return tr, nil
}

// reachable checks, for a minute at most, that the team's vCluster answers at the
// address in its kubeconfig: it does once the team is Ready, wherever kind's node
// addresses route to this machine.
func reachable(ctx context.Context, team, server string, log *progress) error {
	err := teamctl.Reachable(ctx, server, time.Minute, func(addr string, err error) {
		log.printf("team %s: %s does not answer yet: %v", team, addr, err)
	})
	if err != nil {
		return fmt.Errorf("team %s: its vCluster at %s does not answer from this machine (%v): kind node addresses "+
			"route to the host only with a Linux Docker engine (Docker Desktop keeps them inside its VM); see docs/trial.md", team, server, err)
	}
	return nil
}

// createVirtualPod creates a pod in the team's virtual cluster, retrying while the
// virtual API server is not serving yet (or has no default ServiceAccount yet).
func createVirtualPod(ctx context.Context, vc kubernetes.Interface, team, server string, p *corev1.Pod, timeout time.Duration, log *progress) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := vc.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		switch {
		case err == nil:
			log.printf("team %s: pod %s created in its virtual cluster (asks %s)", team, p.Name, asks(p))
			return true, nil
		case apierrors.IsAlreadyExists(err):
			log.printf("team %s: pod %s exists in its virtual cluster", team, p.Name)
			return true, nil
		case apierrors.IsInvalid(err) || (apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "serviceaccount")):
			return false, fmt.Errorf("team %s: pod %s refused by its virtual cluster: %w", team, p.Name, err)
		}
		if last == nil || last.Error() != err.Error() {
			log.printf("team %s: virtual cluster at %s not serving yet: %v", team, server, err)
		}
		last = err
		return false, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("team %s: creating pod %s through %s: %v", team, p.Name, server, last)
	}
	return err
}

// followPod waits for vCluster's host pod of a virtual pod to run and reads what
// GPU it got. A refusal by gpuvc's webhook shows up as a warning event on the
// virtual pod (vCluster records it there) and ends the wait.
func followPod(ctx context.Context, host, vc kubernetes.Interface, team string, p *corev1.Pod, timeout time.Duration, log *progress) (Placement, *corev1.Pod, error) {
	pl := Placement{Pod: p.Name, Asks: asks(p)}
	ns := gpuvcv1.HostNamespace(team)
	var hp *corev1.Pod
	last, refused := "", ""
	report := func(s string) {
		if s != last {
			log.printf("team %s: pod %s: %s", team, p.Name, s)
			last = s
		}
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := host.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		hp = nil
		for i := range pods.Items {
			a := pods.Items[i].Annotations
			if a[vclusterNameAnnotation] == p.Name && a[vclusterNamespaceAnnotation] == p.Namespace {
				hp = &pods.Items[i]
			}
		}
		if hp == nil {
			if refused = warning(ctx, vc, p); refused != "" {
				return true, nil
			}
			report("waiting for vCluster to create it on the host")
			return false, nil
		}
		report(podstatus.Summary(hp))
		return hp.Status.Phase == corev1.PodRunning, nil
	})
	if refused != "" {
		return pl, nil, fmt.Errorf("team %s: pod %s was refused on the host: %s", team, p.Name, refused)
	}
	if err != nil {
		if last != "" {
			err = fmt.Errorf("%w (last: %s)", err, last)
		}
		return pl, nil, fmt.Errorf("team %s: pod %s not running on the host: %w", team, p.Name, err)
	}
	pl.HostPod, pl.Node = hp.Namespace+"/"+hp.Name, hp.Spec.NodeName
	pl.HostGPU = gpuResources(hp)
	if f := hp.Annotations[contract.AnnotationGPUFraction]; f != "" {
		pl.HostGPU = fmt.Sprintf("%s of a GPU the team reserved", f)
	}
	if d := claimedDevices(ctx, host, hp); d != "" {
		pl.HostGPU = d
	}
	return pl, hp, nil
}

// warning returns the message of a refusal recorded on the virtual pod, if any.
func warning(ctx context.Context, vc kubernetes.Interface, p *corev1.Pod) string {
	events, err := vc.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + p.Name + ",type=Warning",
	})
	if err != nil {
		return ""
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name != p.Name || e.Type != corev1.EventTypeWarning {
			continue
		}
		if strings.Contains(e.Message, "denied") || strings.Contains(e.Message, "forbidden") {
			return e.Reason + ": " + e.Message
		}
	}
	return ""
}

// visibleDevices reads the line the demo container printed at start.
func visibleDevices(ctx context.Context, host kubernetes.Interface, p *corev1.Pod) string {
	var devices string
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		b, err := host.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), contract.EnvVisibleDevices+"="); ok {
				devices = v
				return true, nil
			}
		}
		return false, nil
	})
	if devices == "" {
		return "(not read)"
	}
	return devices
}

// Print writes the outcome of Up: nodes, where each demo pod landed, and how to
// connect. gpuvc is how the user runs the gpuvc binary (e.g. bin/gpuvc).
func (r *Result) Print(w io.Writer, gpuvc string) {
	where := "kind cluster " + r.Cluster.Name
	if r.Cluster.Description != "" {
		where = r.Cluster.Description
	}
	fmt.Fprintf(w, "\ngpuvc trial is up on %s.\n\n", where)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tSIMULATED GPUS (allocatable)")
	for _, n := range r.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Node, n.Pool, n.GPUs)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tVIRTUAL POD\tASKS\tHOST POD\tNODE\tHOST GPU\tNVIDIA_VISIBLE_DEVICES")
	for _, t := range r.Teams {
		for _, p := range t.Pods {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, p.Pod, p.Asks, p.HostPod, p.Node, p.HostGPU, p.Devices)
		}
	}
	_ = tw.Flush()
	kubectl := "kubectl"
	if r.Cluster.Kubectl != "" {
		kubectl = r.Cluster.Kubectl
		fmt.Fprintf(w, "\nkubectl below is the one built with the binaries; any kubectl works.\n")
	}
	fmt.Fprintf(w, "\nThe host cluster, as a platform engineer:\n  export KUBECONFIG=%s\n  %s team list -o wide\n", r.Cluster.Kubeconfig, gpuvc)
	for _, t := range r.Teams {
		fmt.Fprintf(w, "\nTeam %s (pool %s; %s), as a team member — its own cluster at %s:\n", t.Name, t.Pool, t.Command, t.Server)
		fmt.Fprintf(w, "  %s team kubeconfig %s -f %s.kubeconfig   # already written to %s\n", gpuvc, t.Name, t.Name, t.Kubeconfig)
		fmt.Fprintf(w, "  %s --kubeconfig %s get pods -o wide\n", kubectl, t.Kubeconfig)
	}
	if len(r.Teams) > 0 && r.WorkloadImage != "" {
		t := r.Teams[0]
		k := kubectl + " --kubeconfig " + t.Kubeconfig
		fmt.Fprintf(w, "\nPod to pod in team %s's cluster — a web server, its Service, a fetch by name from the demo pod train:\n", t.Name)
		fmt.Fprintf(w, "  %s run web --image=%s --image-pull-policy=IfNotPresent --port=8080 --command -- sh -c 'echo hello from web > /tmp/index.html; exec httpd -f -p 8080 -h /tmp'\n", k, r.WorkloadImage)
		fmt.Fprintf(w, "  %s expose pod web --port=80 --target-port=8080\n", k)
		fmt.Fprintf(w, "  %s exec train -- timeout 5 wget -q -O- http://web/    # prints the page: hello from web\n", k)
	}
	if u := r.Cluster.PrometheusURL; u != "" {
		fmt.Fprintf(w, "\nPrometheus, scraping gpuvc, with its alert rules (docs/monitoring.md):\n  %s/graph?g0.expr=%s\n  %s/alerts\n",
			u, url.QueryEscape("sum by (team, resource) (gpuvc_team_gpu_requests)"), u)
	}
	fmt.Fprintf(w, "\nGPUs are simulated: pods are scheduled and given device IDs, nothing runs on a GPU.\nRemove everything with: make trial-down\n")
}
