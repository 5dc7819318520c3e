// Package manager implements `gpuvc manager`: the controller manager that
// provisions teams and fences their pods.
package manager

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"text/template"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	gpuvcmanager "github.com/gpuvc/gpuvc/manager"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/idle"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/syncer/queued"
	"github.com/gpuvc/gpuvc/vclusters"
)

type flags struct {
	metricsAddr, healthAddr string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNS        string
	webhookPort             int
	webhookCertDir          string
	webhookURL              string
	webhookCertSecret       string
	chartRepo, chartVersion string
	chartDir                string
	vclusterValues          string
	serverURL               string
	controlPlanePool        string
	systemPool              string
	reserveImage            string
	kueueUsers              []string
	usageHistoryPools       []string
	notQueuedAfter          time.Duration
	ephemeral               bool
	syncRealNodes           bool
	hostStorageClasses      bool
	metricsProxy            string
	installCRDs             bool
	devLogs                 bool
	accounting              accounting.Options
	idle                    idle.Options
	wakerPorts              string
	agentMetrics            gpuvcmanager.AgentMetrics
	teamWorkers             int
	kubeAPIQPS              float32
	kubeAPIBurst            int
}

// NewCommand returns the manager command.
func NewCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the gpuvc manager: Team reconciler and pod admission webhook",
		Long: "Run the gpuvc manager: it provisions every Team (namespace, quota, limits, network policy,\n" +
			"RBAC, vCluster release, kubeconfig) and serves the pod admission webhook that maps and\n" +
			"fences GPU requests in team namespaces. It runs in the cluster (see charts/gpuvc) or as a\n" +
			"local process against any kubeconfig; locally, --webhook-url registers the webhook at that\n" +
			"address with a fresh self-signed certificate.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, streams, globals, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint ("0" disables it)`)
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" disables them)`)
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", `address of Go's /debug/pprof/ profiles (CPU, heap, block, mutex: where the manager's time and memory go); "0" disables them`)
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader so only one replica acts")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "namespace of the leader-election lease (default: the pod's namespace)")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "port of the pod admission webhook (0 disables it)")
	fs.StringVar(&f.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "folder with the webhook's tls.crt and tls.key")
	fs.StringVar(&f.webhookURL, "webhook-url", "", "outside a cluster: https://<host>:<port> at which the API server reaches this process; writes a serving certificate and registers the webhook")
	fs.StringVar(&f.webhookCertSecret, "webhook-cert-secret", "", "without cert-manager: <namespace>/<name> of an existing Secret in which the manager keeps its own CA and a certificate for "+gpuvcmanager.WebhookServiceName+".<namespace>.svc, renewed before expiry; it copies them into --webhook-cert-dir and the CA into the "+gpuvcmanager.WebhookConfigName+" webhook configurations, and serves and reports ready once they are in place")
	fs.StringVar(&f.chartRepo, "vcluster-chart-repo", "", "vCluster chart repository URL or oci:// reference (default "+vclusters.DefaultRepoURL+")")
	fs.StringVar(&f.chartVersion, "vcluster-chart-version", vclusters.DefaultChartVersion, "vCluster chart version")
	fs.StringVar(&f.chartDir, "vcluster-chart-dir", "", "an unpacked vCluster chart to install instead of a published one")
	fs.StringVar(&f.vclusterValues, "vcluster-values", "", "YAML file of vCluster chart values for every team (registry mirror, distro image, resources); a Team's spec.vcluster.values go over them, gpuvc's fences are kept")
	fs.StringVar(&f.serverURL, "team-server-url", "", "Go template of the URL teams reach their vCluster at, e.g. https://{{.Team}}.vc.example.com, https://{{.ServiceIP}} where Service IPs route, https://<node address>:{{.NodePort}} for NodePort Services (fields .Team, .Namespace, .Release, .ServiceIP, .NodePort; default: the in-cluster Service URL)")
	fs.IntVar(&f.teamWorkers, "team-workers", team.DefaultWorkers, "how many Teams are provisioned at once (each Team by one worker at a time, 1-64); more overlap the waits on the API server of a batch of new teams, at the cost of API server load and the manager's memory during the burst (docs/benchmarks.md)")
	fs.Float32Var(&f.kubeAPIQPS, "kube-api-qps", 50, "requests per second each of the manager's API clients (one per resource kind, and Helm's) may send, in bursts of --kube-api-burst; negative: no client-side limit, the API server's priority and fairness alone paces them (client-go's default, 5, made Team writes the bottleneck of a batch of new teams)")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 100, "requests each API client may send at once above --kube-api-qps")
	fs.StringVar(&f.controlPlanePool, "control-plane-pool", "", "node pool of vCluster control planes (default: any untainted node)")
	fs.StringVar(&f.systemPool, "system-pool", "system", "node pool the webhook pins vCluster control-plane pods to")
	fs.StringVar(&f.reserveImage, "reserve-image", "ghcr.io/gpuvc/gpuvc:latest", `image of fractional-GPU reservation pods (gpuvc reserve); "" turns fractional sharing off`)
	fs.StringSliceVar(&f.kueueUsers, "kueue-user", []string{contract.KueueDefaultUser}, "the user(s) Kueue's controller runs as (comma-separated or repeated): the only ones the webhook lets lift Kueue's admission gate from a queueing team's pod, which holds the team to its guarantee plus borrowing limit; set it when Kueue runs under another namespace or service account")
	fs.StringSliceVar(&f.usageHistoryPools, "usage-history-pool", nil, "pools (comma-separated or repeated) whose queueing teams share their GPUs by usage history: one Kueue ClusterQueue per pool with AdmissionFairSharing, where a freed GPU goes to the team with the least recent use for its spec.queueing.weight, instead of a ClusterQueue per team with guarantees reclaimed by preemption; Kueue's configuration must set admissionFairSharing (docs/queueing.md)")
	fs.BoolVar(&f.ephemeral, "ephemeral-vclusters", false, "keep vCluster datastores in emptyDir (no storage provisioner; data lost on restart)")
	fs.BoolVar(&f.syncRealNodes, "sync-real-nodes", false, "show teams their pool's real nodes; costs isolation: every team's vCluster can then read all pods of the host")
	fs.BoolVar(&f.hostStorageClasses, "host-storage-classes", false, "show teams the host's StorageClasses (kubectl get storageclass in their cluster); each team's vCluster gets a ClusterRole to read them, which the manager creates (chart value vcluster.hostStorageClasses)")
	fs.StringVar(&f.metricsProxy, "vcluster-metrics-proxy", team.MetricsProxyAuto, "whether teams' vClusters proxy the host's Metrics API (kubectl top through a team's kubeconfig): auto (while the host serves metrics.k8s.io, e.g. metrics-server), on or off; without metrics-server on the host the proxied API would keep teams' namespaces from being deleted")
	fs.BoolVar(&f.installCRDs, "install-crds", false, "create or update the Team CRD at start")
	fs.BoolVar(&f.devLogs, "dev-logs", false, "human-readable development logs")
	fs.DurationVar(&f.notQueuedAfter, "not-queued-after", queued.DefaultNotQueuedAfter, "how long a pod the webhook sent to Kueue may go without a Kueue Workload before it gets the Warning event NotQueued (is Kueue running, does its pod integration take the team's namespace?) and counts in gpuvc_team_not_queued_pods")
	fs.DurationVar(&f.accounting.Interval, "accounting-interval", time.Minute, "how often GPU time is sampled and checkpointed; a pod's start and stop are each counted to within it")
	fs.DurationVar(&f.accounting.StatusInterval, "accounting-status-interval", 5*time.Minute, "how often a Team's status.gpuSeconds is written")
	fs.DurationVar(&f.accounting.Retention, "accounting-retention", 7*24*time.Hour, "how long hourly GPU-time buckets (gpuvc team usage --since) are kept")
	fs.StringVar(&f.accounting.Namespace, "accounting-namespace", cmp.Or(os.Getenv("POD_NAMESPACE"), accounting.DefaultNamespace), "namespace of the teams' GPU-time ledgers: gpuvc's own, where no team may write (the chart's release namespace; created when missing)")
	fs.DurationVar(&f.accounting.DeletedRetention, "accounting-deleted-team-retention", 90*24*time.Hour, "how long a deleted team's GPU-time ledger is kept (gpuvc team usage lists it as deleted)")
	fs.StringVar(&f.idle.WakerIP, "waker-address", os.Getenv("POD_IP"), "IP address of this manager at which teams' sleeping vClusters are woken (the chart passes the pod IP); empty turns vCluster sleep (spec.idle.vcluster) off")
	fs.StringVar(&f.wakerPorts, "waker-ports", "40000-40999", "ports the waker listens on, one per team whose vCluster is asleep or about to be")
	fs.DurationVar(&f.idle.Interval, "idle-interval", 30*time.Second, "how often the idle policy looks at every team")
	fs.DurationVar(&f.idle.Probe, "idle-probe", 5*time.Minute, "how long before spec.idle.vcluster.sleepAfter the waker counts API connections (at most half of sleepAfter)")
	fs.IntVar(&f.agentMetrics.Port, "agent-metrics-port", 0, "port of the node agents' /metrics (gpuvc agent --metrics-bind-address); set, the leader applies spec.idle.gpuPods from their per-pod GPU utilization (0: GPU-pod idle policies are only validated)")
	fs.StringSliceVar(&f.agentMetrics.Addresses, "agent-metrics-address", nil, "host:port of a node agent that does not run as a pod (a node's own gpuvc agent daemon), scraped besides the agent pods; repeatable; set, the leader applies spec.idle.gpuPods")
	fs.StringVar(&f.agentMetrics.Namespace, "agent-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the node agent pods (labels app.kubernetes.io/name=gpuvc, app.kubernetes.io/component=agent; the chart's release namespace)")
	return cmd
}

func run(cmd *cobra.Command, streams cli.Streams, globals *cli.Globals, f *flags) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(f.devLogs), zap.WriteTo(streams.ErrOut)))
	ctx := ctrl.SetupSignalHandler()
	if err := checkTeamWorkers(f.teamWorkers); err != nil {
		return err
	}
	if err := checkKubeAPILimit(f.kubeAPIQPS, f.kubeAPIBurst); err != nil {
		return err
	}
	if err := checkUsageHistoryPools(f.usageHistoryPools); err != nil {
		return err
	}
	cfg, err := globals.RESTConfig()
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = f.kubeAPIQPS, f.kubeAPIBurst
	chart, err := chartSource(f)
	if err != nil {
		return err
	}
	serverURL, usesService, err := serverURLFunc(f.serverURL)
	if err != nil {
		return err
	}
	if f.idle.Ports, err = parsePortRange(f.wakerPorts); err != nil {
		return err
	}
	platformValues, err := readValues(f.vclusterValues)
	if err != nil {
		return err
	}
	if f.installCRDs {
		if err := installCRDs(ctx, cfg); err != nil {
			return err
		}
	}
	var certSecret types.NamespacedName
	if f.webhookCertSecret != "" {
		if f.webhookURL != "" {
			return fmt.Errorf("--webhook-url and --webhook-cert-secret both set: the first writes a certificate for a local process, the second rotates the in-cluster one; choose one")
		}
		if certSecret, err = gpuvcmanager.ParseCertSecret(f.webhookCertSecret); err != nil {
			return err
		}
	}
	if f.webhookURL != "" && f.webhookPort != 0 {
		if err := gpuvcmanager.ServeWebhookAt(ctx, cfg, f.webhookURL, f.webhookCertDir); err != nil {
			return err
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	metricsProxy, err := team.MetricsProxy(f.metricsProxy, dc)
	if err != nil {
		return err
	}
	mgr, err := gpuvcmanager.New(ctx, cfg, gpuvcmanager.Options{
		MetricsAddr: f.metricsAddr, HealthAddr: f.healthAddr, PprofAddr: f.pprofAddr,
		LeaderElection: f.leaderElect, LeaderElectionNS: f.leaderElectionNS,
		WebhookPort: f.webhookPort, WebhookCertDir: f.webhookCertDir, WebhookCertSecret: certSecret,
		SystemPool:     f.systemPool,
		ReserveImage:   f.reserveImage,
		KueueUsers:     f.kueueUsers,
		NotQueuedAfter: f.notQueuedAfter,
		Accounting:     f.accounting,
		Idle:           f.idle,
		AgentMetrics:   f.agentMetrics,
		Team: team.Options{
			Chart:                chart,
			ServerURL:            serverURL,
			ServerURLUsesService: usesService,
			PlatformValues:       platformValues,
			ControlPlanePool:     f.controlPlanePool,
			Persistence:          vclusters.Persistence{Ephemeral: f.ephemeral},
			SyncRealNodes:        f.syncRealNodes,
			HostStorageClasses:   f.hostStorageClasses,
			MetricsProxy:         metricsProxy,
			Workers:              f.teamWorkers,
			UsageHistoryPools:    f.usageHistoryPools,
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(streams.ErrOut, "gpuvc manager starting")
	return mgr.Start(ctx)
}

func chartSource(f *flags) (vclusters.ChartSource, error) {
	src := vclusters.ChartSource{Version: f.chartVersion, Dir: f.chartDir}
	switch {
	case f.chartRepo == "":
	case len(f.chartRepo) > 6 && f.chartRepo[:6] == "oci://":
		src.OCI = f.chartRepo
	default:
		src.RepoURL = f.chartRepo
	}
	if src.Dir != "" && (src.OCI != "" || src.RepoURL != "") {
		return src, fmt.Errorf("--vcluster-chart-dir %q and --vcluster-chart-repo %q both set: choose one chart source", src.Dir, f.chartRepo)
	}
	return src, src.Validate()
}

// serverURLFunc turns --team-server-url into a function of the Team and its
// control-plane Service; the template sees .Team (name), .Namespace, .Release,
// .ServiceIP and .NodePort. usesService tells whether the URL depends on the
// Service.
func serverURLFunc(text string) (url func(*gpuvcv1.Team, team.ServiceAddress) string, usesService bool, err error) {
	if text == "" {
		return nil, false, nil
	}
	tmpl, err := template.New("team-server-url").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, false, fmt.Errorf("--team-server-url %q is not a valid template: %w", text, err)
	}
	data := func(t *gpuvcv1.Team, svc team.ServiceAddress) map[string]any {
		return map[string]any{"Team": t.Name, "Namespace": gpuvcv1.HostNamespace(t.Name), "Release": gpuvcv1.ReleaseName(t),
			"ServiceIP": svc.ClusterIP, "NodePort": svc.NodePort}
	}
	// Two probes with different Service addresses tell whether the template uses them.
	var probe, probeSvc bytes.Buffer
	if err := tmpl.Execute(&probe, data(&gpuvcv1.Team{}, team.ServiceAddress{})); err != nil {
		return nil, false, fmt.Errorf("--team-server-url %q: %w (use .Team, .Namespace, .Release, .ServiceIP or .NodePort)", text, err)
	}
	_ = tmpl.Execute(&probeSvc, data(&gpuvcv1.Team{}, team.ServiceAddress{ClusterIP: "10.96.0.10", NodePort: 30443}))
	return func(t *gpuvcv1.Team, svc team.ServiceAddress) string {
		var b bytes.Buffer
		_ = tmpl.Execute(&b, data(t, svc))
		return b.String()
	}, probe.String() != probeSvc.String(), nil
}

// readValues reads the --vcluster-values file: a YAML object of chart values.
func readValues(path string) (map[string]any, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--vcluster-values: %w", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		return nil, fmt.Errorf("--vcluster-values %s: not a YAML object of chart values: %w", path, err)
	}
	return values, nil
}

// maxTeamWorkers bounds --team-workers: past it a burst of Helm installs only
// queues on the API server and multiplies the manager's memory.
const maxTeamWorkers = 64

func checkTeamWorkers(n int) error {
	if n < 1 || n > maxTeamWorkers {
		return fmt.Errorf("--team-workers %d: want 1 to %d Teams provisioned at once (default %d)", n, maxTeamWorkers, team.DefaultWorkers)
	}
	return nil
}

func checkKubeAPILimit(qps float32, burst int) error {
	if qps == 0 || (qps > 0 && burst < 1) {
		return fmt.Errorf("--kube-api-qps %g --kube-api-burst %d: want a positive rate with a burst of at least 1, or a negative rate for no client-side limit", qps, burst)
	}
	return nil
}
