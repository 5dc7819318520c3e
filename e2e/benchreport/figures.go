package main

// A figure of the report: one metric of one benchmark, and what it is
// compared with in the same run.
type figure struct {
	What   string
	Ref    ref
	Unit   string // shown after the value
	Versus versus
}

// ref names a metric of a benchmark (package-relative name, no -N suffix).
type ref struct {
	Pkg, Bench, Metric string
}

// versus is a figure's baseline: another metric of the same run (Base), or
// none when the metric already is a ratio to its baseline (Self says what it
// is relative to).
type versus struct {
	Base *ref
	Self string
	What string // how the report names the baseline
}

type section struct {
	Title, Note string
	Figures     []figure
}

const (
	pkgBench = "github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	pkgScale = "github.com/gpuvc/gpuvc/e2e/scale"
	pkgShare = "github.com/gpuvc/gpuvc/syncer/share"
	pkgInteg = "github.com/gpuvc/gpuvc/syncer/integration"
	pkgGPU   = "github.com/gpuvc/gpuvc/gpu/share"
	pkgMIG   = "github.com/gpuvc/gpuvc/gpu/mig"
	pkgAcct  = "github.com/gpuvc/gpuvc/manager/accounting"
	pkgVCMem = "github.com/gpuvc/gpuvc/e2e/vcmem"
	pkgQueue = "github.com/gpuvc/gpuvc/manager/teamqueue"
)

func r(pkg, bench, metric string) ref { return ref{pkg, bench, metric} }
func base(pkg, bench, metric, what string) versus {
	b := r(pkg, bench, metric)
	return versus{Base: &b, What: what}
}
func self(what string) versus { return versus{Self: what} }

var (
	draClaim = "BenchmarkManagerDRAClaimLatency"
	overhead = "BenchmarkManagerWebhookOverhead"
	offP50   = base(pkgBench, overhead, "off-p50-ms", "same namespace, webhook off, p50")
	offP99   = base(pkgBench, overhead, "off-p99-ms", "same namespace, webhook off, p99")
	onP50    = base(pkgBench, overhead, "on-p50-ms", "one pod create through the webhook, p50")
	onP99    = base(pkgBench, overhead, "on-p99-ms", "one pod create through the webhook, p99")
	nsP50    = base(pkgScale, "BenchmarkScale", "ns-p50-ms", "plain namespace create, p50")
	rssIdle  = base(pkgScale, "BenchmarkScale", "rss-idle-MiB", "idle manager, no team")
	cpuIdle  = base(pkgScale, "BenchmarkScale", "cpu-idle-%", "idle manager, no team")
	vcMem    = "BenchmarkVClusterMemory"
	workers1 = "BenchmarkTeamWorkers/workers=1"
	workers4 = "BenchmarkTeamWorkers/workers=4"

	utilQueued  = "BenchmarkPoolUtilization/queue=default"
	utilRefused = "BenchmarkPoolUtilization/queue=0"
	sharesBench = "BenchmarkUsageHistoryShares"
	vcMemDef    = base(pkgVCMem, vcMem, "default-MiB/team", "gpuvc's values, RSS per team")
	vcMemWS     = base(pkgVCMem, vcMem, "default-ws-MiB/team", "gpuvc's values, working set per team")
	vcMemCPU    = base(pkgVCMem, vcMem, "default-cpu-%/team", "gpuvc's values, idle CPU per team")
)

func throughput(clients string) []figure {
	b := "BenchmarkManagerThroughput/clients=" + clients
	return []figure{{
		What: "pods/s, " + clients + " client(s), webhook on", Ref: r(pkgBench, b, "on-pods/s"), Unit: "pods/s",
		Versus: base(pkgBench, b, "off-pods/s", "same clients, webhook off"),
	}}
}

// costs are the CPU per pod of each process and the API server's own view of
// admission, webhook on against off, at a client count.
func costs(clients string) []figure {
	b := "BenchmarkManagerThroughput/clients=" + clients
	f := func(what, metric, unit string) figure {
		return figure{What: what + ", " + clients + " clients, webhook on", Ref: r(pkgBench, b, "on-"+metric), Unit: unit,
			Versus: base(pkgBench, b, "off-"+metric, "webhook off")}
	}
	return []figure{
		f("kube-apiserver CPU per pod", "kube-apiserver-cpu-ms/pod", "ms"),
		f("gpuvc manager (in process, with the clients) CPU per pod", "gpuvc+clients-cpu-ms/pod", "ms"),
		f("etcd CPU per pod", "etcd-cpu-ms/pod", "ms"),
		f("API requests per pod created (the API server's count: the pod, its events, the rest)", "apiserver-requests/pod", ""),
		f("… of which Event requests", "apiserver-event-requests/pod", ""),
		{What: "the API server's mutating webhook call, mean, " + clients + " clients", Ref: r(pkgBench, b, "on-apiserver-admit-webhook-mean-ms"), Unit: "ms"},
		{What: "… the manager's webhook server on that call, handler in → answer written, mean", Ref: r(pkgBench, b, "on-served-mutate-pods-mean-ms"), Unit: "ms",
			Versus: base(pkgBench, b, "on-apiserver-admit-webhook-mean-ms", "the API server's mutating call, mean")},
		{What: "the API server's validating webhook calls per pod created, " + clients + " clients (routine pods skip it: docs/syncer.md)", Ref: r(pkgBench, b, "on-apiserver-validating-webhook-calls/pod")},
		{What: "the API server's validating webhook call, mean, " + clients + " clients", Ref: r(pkgBench, b, "on-apiserver-validating-webhook-mean-ms"), Unit: "ms"},
		{What: "… the manager's webhook server on that call, handler in → answer written, mean", Ref: r(pkgBench, b, "on-served-validate-pods-mean-ms"), Unit: "ms",
			Versus: base(pkgBench, b, "on-apiserver-validating-webhook-mean-ms", "the API server's validating call, mean")},
		{What: "webhook TLS connections opened per pod, " + clients + " clients", Ref: r(pkgBench, b, "on-webhook-connections/pod")},
		f("API Priority and Fairness queue wait, mean", "apf-wait-mean-ms", "ms"),
	}
}

var sections = []section{
	{Title: "Admission: gpuvc's webhook alone", Note: "One team namespace (ResourceQuota, LimitRange, CEL fence) and one admitted CPU pod template; " +
		"the webhook configurations are deleted and re-created between blocks of 25 pods, so only the webhook call differs. " +
		"Manager in process (manager.New via managertest).",
		Figures: append(append(append(append([]figure{
			{What: "pod create latency p50, webhook on", Ref: r(pkgBench, overhead, "on-p50-ms"), Unit: "ms", Versus: offP50},
			{What: "pod create latency p99, webhook on", Ref: r(pkgBench, overhead, "on-p99-ms"), Unit: "ms", Versus: offP99},
		}, throughput("1")...), throughput("16")...), throughput("32")...), append(throughput("64"),
			figure{What: "webhook only (no quota, no CEL fence), one-GPU pods, p50", Ref: r(pkgInteg, "BenchmarkAdmission", "webhook-p50-ms"), Unit: "ms",
				Versus: base(pkgInteg, "BenchmarkAdmission", "plain-p50-ms", "plain namespace, no gpuvc, p50")})...)},
	{Title: "Admission: where the time goes", Note: "What a pod create costs each process, webhook on against off, in the throughput benchmark's blocks " +
		"(CPU time from /proc over the blocks, per pod created), and the API server's own view: its webhook calls' duration " +
		"(apiserver_admission_webhook_admission_duration_seconds) and its flow-control queue wait; against the API server's time for a call, " +
		"the manager's webhook server's own (controller_runtime_webhook_latency_seconds: handler entered to answer written, body read and decoding included) — the rest is the transport and " +
		"waits for a core — and the TLS connections it accepted (gpuvc_webhook_connections_total: each a full handshake). The manager runs in the benchmark's process, " +
		"so its line includes the clients (the same in both modes): the difference is the manager's. " +
		"`BENCH_PROFILE_DIR=dir` also writes CPU profiles of the API server and of this process per block (the hand-written summary below reads them).",
		Figures: append(append(append([]figure{
			{What: "the API server's mutating webhook call, p50, one pod at a time", Ref: r(pkgBench, overhead, "on-apiserver-admit-webhook-p50-ms"), Unit: "ms", Versus: offP50},
			{What: "the API server's validating webhook call, p50, one pod at a time", Ref: r(pkgBench, overhead, "on-apiserver-validating-webhook-p50-ms"), Unit: "ms", Versus: offP50},
			{What: "… the manager's webhook server on the mutating call, handler in → answer written, mean, one pod at a time", Ref: r(pkgBench, overhead, "on-served-mutate-pods-mean-ms"), Unit: "ms",
				Versus: base(pkgBench, overhead, "on-apiserver-admit-webhook-mean-ms", "the API server's mutating call, mean")},
			{What: "… on the validating call, mean, one pod at a time", Ref: r(pkgBench, overhead, "on-served-validate-pods-mean-ms"), Unit: "ms",
				Versus: base(pkgBench, overhead, "on-apiserver-validating-webhook-mean-ms", "the API server's validating call, mean")},
		}, costs("1")...), costs("16")...), costs("64")...)},
	{Title: "Fractional GPUs: ungate latency and reservations", Note: "Share pods created as a tenant's pod reaches the host; latency is create → gate removed, seen by a watch.",
		Figures: []figure{
			{What: "ungate latency p50 (manager)", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "p50-ms"), Unit: "ms", Versus: onP50},
			{What: "ungate latency p99 (manager)", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "p99-ms"), Unit: "ms", Versus: onP99},
			{What: "… step: the share pod's create through the webhooks, p50", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "create-p50-ms"), Unit: "ms", Versus: onP50},
			{What: "… step: created → its share ConfigMap seen (watch, reconcile, write), p50", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "configmap-p50-ms"), Unit: "ms"},
			{What: "… step: ConfigMap seen → gate seen gone (pod update through the webhooks), p50", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "lift-p50-ms"), Unit: "ms"},
			{What: "… the share controller's own wait, its watch delivering the pod → gate removal written, mean", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "seen-to-bound-mean-ms"), Unit: "ms"},
			{What: "… the share controller's reconciles per share pod (each create, binding, status change and deletion wakes one)", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "reconciles/pod")},
			{What: "… its reconcile, mean", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "reconcile-mean-ms"), Unit: "ms"},
			{What: "… a request's wait in its work queue, mean", Ref: r(pkgBench, "BenchmarkManagerUngateLatency", "queue-wait-mean-ms"), Unit: "ms"},
			{What: "ungate latency p50 (share controller alone)", Ref: r(pkgShare, "BenchmarkUngateLatency", "p50-ms"), Unit: "ms", Versus: onP50},
			{What: "… step: created → its share ConfigMap seen, p50 (share controller alone)", Ref: r(pkgShare, "BenchmarkUngateLatency", "configmap-p50-ms"), Unit: "ms"},
			{What: "… its reconciles per share pod (share controller alone)", Ref: r(pkgShare, "BenchmarkUngateLatency", "reconciles/pod")},
			{What: "… its reconcile, mean (share controller alone)", Ref: r(pkgShare, "BenchmarkUngateLatency", "reconcile-mean-ms"), Unit: "ms"},
			{What: "burst of 30–40 pods (Σ ≤ 7 GPUs): per-pod latency p50", Ref: r(pkgBench, "BenchmarkManagerBurst", "p50-ms"), Unit: "ms", Versus: onP50},
			{What: "burst: … the pod's create, p50", Ref: r(pkgBench, "BenchmarkManagerBurst", "create-p50-ms"), Unit: "ms"},
			{What: "burst: … created → its reservation ready, p50", Ref: r(pkgBench, "BenchmarkManagerBurst", "for-reservation-p50-ms"), Unit: "ms"},
			{What: "burst: … reservation ready → gate removed, p50", Ref: r(pkgBench, "BenchmarkManagerBurst", "after-ready-p50-ms"), Unit: "ms"},
			{What: "burst: API requests per share pod (the API server's count)", Ref: r(pkgBench, "BenchmarkManagerBurst", "apiserver-requests/pod")},
			{What: "burst: share controller reconciles per pod", Ref: r(pkgBench, "BenchmarkManagerBurst", "reconciles/pod")},
			{What: "burst: reservations held", Ref: r(pkgBench, "BenchmarkManagerBurst", "reservations"), Unit: "",
				Versus: base(pkgBench, "BenchmarkManagerBurst", "lower-bound", "ceil(Σ fractions) of the burst")},
			{What: "static mix `small` (1000 requests, largest first): GPUs", Ref: r(pkgGPU, "BenchmarkStaticPacking/small", "gpus/lowerbound"), Unit: "× bound", Versus: self("ceil(Σ)")},
			{What: "static mix `mixed` (with gpu-memory requests): GPUs", Ref: r(pkgGPU, "BenchmarkStaticPacking/mixed", "gpus/lowerbound"), Unit: "× bound", Versus: self("ceil(Σ)")},
			{What: "static mix `halves` (mostly > 0.5): GPUs", Ref: r(pkgGPU, "BenchmarkStaticPacking/halves", "gpus/lowerbound"), Unit: "× bound", Versus: self("ceil(Σ)")},
			{What: "static mix `halves`: GPUs against the L2 bound", Ref: r(pkgGPU, "BenchmarkStaticPacking/halves", "gpus/L2bound"), Unit: "× bound", Versus: self("Martello–Toth L2")},
			{What: "churn (20,000 arrivals/departures, 300 live), mean", Ref: r(pkgGPU, "BenchmarkOnlineChurn", "gpus/lowerbound"), Unit: "× bound", Versus: self("ceil(Σ) of live requests")},
			{What: "churn, worst sample", Ref: r(pkgGPU, "BenchmarkOnlineChurn", "worst-gpus/lowerbound"), Unit: "× bound", Versus: self("ceil(Σ) of live requests")},
			{What: "churn, mean against the L2 bound", Ref: r(pkgGPU, "BenchmarkOnlineChurn", "gpus/L2bound"), Unit: "× bound", Versus: self("L2 of live requests")},
		}},
	{Title: "DRA: claim allocation latency (issue #24)", Note: "A spec.dra team's namespace (gpuvc's webhook and CEL fence, its ResourceQuota) and one kwok node whose 8 A100s are half device-plugin GPUs, half DRA devices of gpuvc's driver (its ResourceSlice). " +
		"One pod at a time, alternating: one GPU through a ResourceClaimTemplate (the resource claim controller makes the claim, the scheduler allocates a device before it binds) against nvidia.com/gpu: 1 of the device plugin; latency is create → bound to the node, seen by a watch; each pod and its claim are gone before the next.",
		Figures: []figure{
			{What: "pod with a ResourceClaimTemplate: create → bound, p50", Ref: r(pkgBench, draClaim, "claim-p50-ms"), Unit: "ms",
				Versus: base(pkgBench, draClaim, "plugin-p50-ms", "device-plugin GPU pod, same node, p50")},
			{What: "pod with a ResourceClaimTemplate: create → bound, p99", Ref: r(pkgBench, draClaim, "claim-p99-ms"), Unit: "ms",
				Versus: base(pkgBench, draClaim, "plugin-p99-ms", "device-plugin GPU pod, same node, p99")},
			{What: "samples of each kind", Ref: r(pkgBench, draClaim, "samples")},
		}},
	{Title: "MIG placement", Note: "Seeded cases on two A100-40GB GPUs, the first partly used, 1–4 requested instances; the exhaustive search tries every (GPU, start) for every instance.",
		Figures: []figure{
			{What: "cases where Pack's cost equals the exhaustive optimum", Ref: r(pkgMIG, "BenchmarkPackVsExhaustive", "optimal-share"), Unit: "share", Versus: self("exhaustive search")},
			{What: "Pack time per case", Ref: r(pkgMIG, "BenchmarkPackVsExhaustive", "pack-us/case"), Unit: "µs",
				Versus: base(pkgMIG, "BenchmarkPackVsExhaustive", "exhaustive-us/case", "exhaustive search per case")},
			{What: "greedy fallback (past MaxSearchStates): GPUs", Ref: r(pkgMIG, "BenchmarkPackVsExhaustive", "greedy-gpus/optimum"), Unit: "× optimum", Versus: self("exhaustive optimum")},
			{What: "pool plan, 60 instances on 40 A100-80GB: GPUs", Ref: r(pkgMIG, "BenchmarkPackPool", "gpus/lowerbound"), Unit: "× bound", Versus: self("ceil(memory slots / 8)")},
		}},
	{Title: "Teams: provisioning and cold start", Note: "`gpuvc manager` as its own process on the local control plane with kwok nodes (no container runs: " +
		"VClusterReady means the release is applied and its control-plane workload reported ready by kwok).",
		Figures: []figure{
			{What: "team create → host objects (namespace … RBAC, seen by a watch) p50", Ref: r(pkgScale, "BenchmarkScale", "host-p50-ms"), Unit: "ms", Versus: nsP50},
			{What: "team create → host objects p99", Ref: r(pkgScale, "BenchmarkScale", "host-p99-ms"), Unit: "ms", Versus: nsP50},
			{What: "team create → vCluster release applied (VClusterReady) p50", Ref: r(pkgScale, "BenchmarkScale", "release-p50-ms"), Unit: "ms", Versus: nsP50},
			{What: "team create → vCluster release applied p99", Ref: r(pkgScale, "BenchmarkScale", "release-p99-ms"), Unit: "ms", Versus: nsP50},
			{What: "cold start: Teams waiting, manager start → all VClusterReady", Ref: r(pkgScale, "BenchmarkScale", "cold-start-s"), Unit: "s",
				Versus: base(pkgScale, "BenchmarkScale", "cold-serial-s", "as many teams × the one-at-a-time p50")},
			{What: "restart with every team and pod in place → each Team reconciled, queue empty", Ref: r(pkgScale, "BenchmarkScale", "restart-all-s"), Unit: "s",
				Versus: base(pkgScale, "BenchmarkScale", "idle-start-s", "manager start → ready, no team")},
			{What: "manager start → ready, no team", Ref: r(pkgScale, "BenchmarkScale", "idle-start-s"), Unit: "s"},
		}},
	{Title: "Teams: a batch at once, by Team workers", Note: "`e2e/scale` `BenchmarkTeamWorkers`: a warm `gpuvc manager` process, a batch of Teams (20; 50 at full scale; " +
		"1 GPU each) created at once by 8 clients as `gpuvc apply -f teams/` does, once with 1 Team worker and once with 4 (`--team-workers`, default 4); " +
		"time from the first create until every Team is VClusterReady and Ready (the benchmark writes each kubeconfig Secret as vCluster would).",
		Figures: []figure{
			{What: "teams in the batch", Ref: r(pkgScale, workers4, "teams")},
			{What: "4 workers: first create → every Team VClusterReady", Ref: r(pkgScale, workers4, "all-vcluster-s"), Unit: "s",
				Versus: base(pkgScale, workers1, "all-vcluster-s", "1 worker")},
			{What: "4 workers: first create → every Team Ready", Ref: r(pkgScale, workers4, "all-ready-s"), Unit: "s",
				Versus: base(pkgScale, workers1, "all-ready-s", "1 worker")},
		}},
	{Title: "Manager resources at scale", Note: "RSS (VmRSS) and CPU (utime+stime) of the `gpuvc manager` process from /proc, after a 30 s window (65 s with the pods: it holds one accounting sample); " +
		"CPU in % of one core. Live heap: the Go heap just after a collection (a heap profile with gc=1 from --pprof-bind-address), what the manager's objects hold, " +
		"without the garbage and free pages RSS also counts. The pods are a mix created by 16 clients through the webhook: whole GPUs, MIG slices (1g.10gb) and " +
		"fractions (0.25, served by reservation pods) in turn; every other team queues its GPU pods in Kueue beyond a guarantee of 2 GPUs and 2 slices. " +
		"API requests at rest: the manager's own (client-go's rest_client_requests_total) over the window with the pods, and its share of the API server's " +
		"apiserver_request_total by verb (the window with the manager less the same window with it stopped).",
		Figures: []figure{
			{What: "teams (half of them queueing in Kueue)", Ref: r(pkgScale, "BenchmarkScale", "teams")},
			{What: "pods (whole GPUs, MIG slices, fractions; every one scheduled or waiting in Kueue)", Ref: r(pkgScale, "BenchmarkScale", "pods")},
			{What: "… whole-GPU pods", Ref: r(pkgScale, "BenchmarkScale", "pods-whole")},
			{What: "… MIG pods", Ref: r(pkgScale, "BenchmarkScale", "pods-mig")},
			{What: "… fractional pods", Ref: r(pkgScale, "BenchmarkScale", "pods-fraction")},
			{What: "… waiting in Kueue (gated, with a Workload)", Ref: r(pkgScale, "BenchmarkScale", "pods-waiting-in-kueue")},
			{What: "Kueue Workloads", Ref: r(pkgScale, "BenchmarkScale", "kueue-workloads")},
			{What: "live heap with the teams and pods", Ref: r(pkgScale, "BenchmarkScale", "live-heap-pods-MiB"), Unit: "MiB",
				Versus: base(pkgScale, "BenchmarkScale", "live-heap-idle-MiB", "idle manager, no team")},
			{What: "live heap per team", Ref: r(pkgScale, "BenchmarkScale", "live-KiB/team"), Unit: "KiB"},
			{What: "live heap per pod", Ref: r(pkgScale, "BenchmarkScale", "live-B/pod"), Unit: "bytes"},
			{What: "RSS with the teams", Ref: r(pkgScale, "BenchmarkScale", "rss-teams-MiB"), Unit: "MiB", Versus: rssIdle},
			{What: "RSS with the teams and pods", Ref: r(pkgScale, "BenchmarkScale", "rss-pods-MiB"), Unit: "MiB", Versus: rssIdle},
			{What: "memory per team", Ref: r(pkgScale, "BenchmarkScale", "MiB/team"), Unit: "MiB"},
			{What: "memory per pod", Ref: r(pkgScale, "BenchmarkScale", "KiB/pod"), Unit: "KiB"},
			{What: "peak RSS (VmHWM)", Ref: r(pkgScale, "BenchmarkScale", "peak-rss-MiB"), Unit: "MiB", Versus: rssIdle},
			{What: "CPU, steady, with the teams", Ref: r(pkgScale, "BenchmarkScale", "cpu-teams-%"), Unit: "%", Versus: cpuIdle},
			{What: "CPU, steady, with the teams and pods", Ref: r(pkgScale, "BenchmarkScale", "cpu-pods-%"), Unit: "%", Versus: cpuIdle},
			{What: "CPU spent while the pods were created and scheduled", Ref: r(pkgScale, "BenchmarkScale", "cpu-s-pods"), Unit: "s"},
			{What: "pods created per second (16 clients)", Ref: r(pkgScale, "BenchmarkScale", "pods-created/s"), Unit: "pods/s",
				Versus: base(pkgBench, "BenchmarkManagerThroughput/clients=16", "on-pods/s", "one namespace, 16 clients, webhook on")},
			{What: "the manager's API requests per minute at rest, with the teams and pods", Ref: r(pkgScale, "BenchmarkScale", "rest-requests/min"), Unit: "/min",
				Versus: base(pkgScale, "BenchmarkScale", "rest-teams-requests/min", "with the teams only")},
			{What: "… of which GET (gets and lists)", Ref: r(pkgScale, "BenchmarkScale", "rest-GET/min"), Unit: "/min"},
			{What: "… of which PATCH", Ref: r(pkgScale, "BenchmarkScale", "rest-PATCH/min"), Unit: "/min"},
			{What: "… of which POST (creates, events)", Ref: r(pkgScale, "BenchmarkScale", "rest-POST/min"), Unit: "/min"},
			{What: "the manager's share of the API server's LISTs per minute at rest", Ref: r(pkgScale, "BenchmarkScale", "api-LIST/min"), Unit: "/min"},
			{What: "… GETs", Ref: r(pkgScale, "BenchmarkScale", "api-GET/min"), Unit: "/min"},
			{What: "… PATCHes and APPLYs", Ref: r(pkgScale, "BenchmarkScale", "api-PATCH/min"), Unit: "/min"},
			{What: "… CREATEs", Ref: r(pkgScale, "BenchmarkScale", "api-CREATE/min"), Unit: "/min"},
			{What: "the API server's requests per minute at rest, every client", Ref: r(pkgScale, "BenchmarkScale", "apiserver-requests/min"), Unit: "/min"},
		}},
	{Title: "vCluster control-plane memory per team (real node)", Note: "`gpuvc dev cluster up` with its real node, gpuvc installed, teams of each variant running at once, " +
		"each checked by a pod created through its kubeconfig that runs on the node, then idle 90 s. Per team: the vCluster pod and the CoreDNS pod it syncs, " +
		"their processes found by memory cgroup. RSS = Σ VmRSS (counts the mapped binaries, which teams on one node share); anonymous = Σ RssAnon (private to the team); " +
		"working set = Σ usage_in_bytes − total_inactive_file of the container cgroups (v1, what the kubelet evicts by); CPU over the next 60 s, % of one core. " +
		"Variants (e2e/vcmem/trim.go): `flags` = apiserver --watch-cache=false --enable-priority-and-fairness=false, controller-manager --leader-elect=false, no profiling; " +
		"`gogc`, `gogc25` = flags + GOGC=50, 25.",
		Figures: []figure{
			{What: "teams per variant", Ref: r(pkgVCMem, vcMem, "teams/variant")},
			{What: "RSS per team, gpuvc's values", Ref: r(pkgVCMem, vcMem, "default-MiB/team"), Unit: "MiB"},
			{What: "… of which kube-apiserver", Ref: r(pkgVCMem, vcMem, "default-apiserver-MiB/team"), Unit: "MiB", Versus: vcMemDef},
			{What: "… of which the syncer (vcluster)", Ref: r(pkgVCMem, vcMem, "default-syncer-MiB/team"), Unit: "MiB", Versus: vcMemDef},
			{What: "… of which kube-controller-manager", Ref: r(pkgVCMem, vcMem, "default-controller-manager-MiB/team"), Unit: "MiB", Versus: vcMemDef},
			{What: "… of which kine (SQLite)", Ref: r(pkgVCMem, vcMem, "default-kine-MiB/team"), Unit: "MiB", Versus: vcMemDef},
			{What: "… of which CoreDNS", Ref: r(pkgVCMem, vcMem, "default-coredns-MiB/team"), Unit: "MiB", Versus: vcMemDef},
			{What: "anonymous memory per team, gpuvc's values", Ref: r(pkgVCMem, vcMem, "default-anon-MiB/team"), Unit: "MiB", Versus: vcMemDef},
			{What: "working set per team, gpuvc's values", Ref: r(pkgVCMem, vcMem, "default-ws-MiB/team"), Unit: "MiB", Versus: vcMemDef},
			{What: "idle CPU per team, gpuvc's values", Ref: r(pkgVCMem, vcMem, "default-cpu-%/team"), Unit: "%"},
			{What: "working set per team, trimmed flags", Ref: r(pkgVCMem, vcMem, "flags-ws-MiB/team"), Unit: "MiB", Versus: vcMemWS},
			{What: "working set per team, flags + GOGC=50", Ref: r(pkgVCMem, vcMem, "gogc-ws-MiB/team"), Unit: "MiB", Versus: vcMemWS},
			{What: "working set per team, flags + GOGC=25", Ref: r(pkgVCMem, vcMem, "gogc25-ws-MiB/team"), Unit: "MiB", Versus: vcMemWS},
			{What: "anonymous memory per team, flags + GOGC=50", Ref: r(pkgVCMem, vcMem, "gogc-anon-MiB/team"), Unit: "MiB",
				Versus: base(pkgVCMem, vcMem, "default-anon-MiB/team", "gpuvc's values, anonymous per team")},
			{What: "idle CPU per team, flags + GOGC=50", Ref: r(pkgVCMem, vcMem, "gogc-cpu-%/team"), Unit: "%", Versus: vcMemCPU},
			{What: "idle CPU per team, flags + GOGC=25", Ref: r(pkgVCMem, vcMem, "gogc25-cpu-%/team"), Unit: "%", Versus: vcMemCPU},
			{What: "benchmark run time (stack up, teams, checks, settle)", Ref: r(pkgVCMem, vcMem, "run-s"), Unit: "s"},
		}},
	{Title: "Elastic GPU quota on Kueue (issue #15)", Note: "The real Kueue v0.17.0 and gpuvc manager on the local control plane, kwok GPU nodes. " +
		"Handoff: a team's one GPU, a pod running and one waiting in Kueue; the running one completes (status Succeeded) → the waiting one's gate removed, seen by a watch. " +
		"Utilization: two teams guaranteed 4 GPUs each of an 8-GPU pool, a seeded steady (≈2.5 GPUs) and bursty (backlog) load for 40 s, GPU-seconds run / capacity-seconds; " +
		"jobs evicted by a reclaim restart from scratch (docs/queueing.md).",
		Figures: []figure{
			{What: "GPU freed → next queued pod ungated, p50", Ref: r(pkgQueue, "BenchmarkQueueHandoff", "handoff-p50-ms"), Unit: "ms",
				Versus: base(pkgQueue, "BenchmarkQueueHandoff", "free-p50-ms", "pod created on a free GPU → ungated, p50")},
			{What: "GPU freed → next queued pod ungated, p99", Ref: r(pkgQueue, "BenchmarkQueueHandoff", "handoff-p99-ms"), Unit: "ms",
				Versus: base(pkgQueue, "BenchmarkQueueHandoff", "free-p99-ms", "pod created on a free GPU → ungated, p99")},
			{What: "pool utilization with borrowing (borrowingLimit 4), pods waiting in Kueue (default queue depth)", Ref: r(pkgQueue, utilQueued, "util-borrow"), Unit: "",
				Versus: base(pkgQueue, utilQueued, "util-noborrow", "same load, borrowingLimit 0")},
			{What: "… of it run by pods later evicted (work lost)", Ref: r(pkgQueue, utilQueued, "lost-borrow"), Unit: "", Versus: self("pool capacity")},
			{What: "jobs completed with borrowing", Ref: r(pkgQueue, utilQueued, "jobs-done-borrow"), Unit: "",
				Versus: base(pkgQueue, utilQueued, "jobs-done-noborrow", "same load, borrowingLimit 0")},
			{What: "pool utilization with borrowing, queue depth 0 (refused beyond the ceiling, resubmitted)", Ref: r(pkgQueue, utilRefused, "util-borrow"), Unit: "",
				Versus: base(pkgQueue, utilRefused, "util-noborrow", "same load, borrowingLimit 0")},
			{What: "pool utilization with borrowing: pods waiting in Kueue vs refused at the ceiling", Ref: r(pkgQueue, utilQueued, "util-borrow"), Unit: "",
				Versus: base(pkgQueue, utilRefused, "util-borrow", "queue depth 0, with borrowing")},
		}},
	{Title: "Fairness with memory: usage-history fair sharing (issue #25)", Note: "The real Kueue v0.17.0 (admissionFairSharing: half-life 30 s, sampling 1 s) and gpuvc manager on the local control plane, kwok GPU nodes. " +
		"Two teams with spec.queueing.weight 1 and 2, each guaranteed 2 GPUs of a 4-GPU pool, each submitting its whole backlog of 48 one-GPU pods of 4 s at the start (in turn; more than the pool runs in the 45-s window) and nothing later, so that Kueue's order gives every GPU that frees up. " +
		"History: the pool in `--usage-history-pool`, one ClusterQueue ordering the teams by decayed past use over weight (Kueue's AdmissionFairSharing). " +
		"No history: gpuvc's ClusterQueue per team in the pool's cohort, borrowingLimit 2 each (Kueue's fair sharing of idle quota by weight, no memory). " +
		"Figure: the weight-2 team's share of the GPU-seconds run in the window; its weights' share is 0.667 (docs/queueing.md).",
		Figures: []figure{
			{What: "weight-2 team's share of GPU-seconds, with usage history", Ref: r(pkgQueue, sharesBench, "w2-share-history"), Unit: "",
				Versus: base(pkgQueue, sharesBench, "w2-share-nohistory", "same load, a ClusterQueue per team (no history)")},
			{What: "… in the window's second half (the history at work: the team behind in the first half catches up)", Ref: r(pkgQueue, sharesBench, "w2-late-share-history"), Unit: "",
				Versus: base(pkgQueue, sharesBench, "w2-late-share-nohistory", "same, no history")},
			{What: "weight-2 team's share with usage history, against its weights' share", Ref: r(pkgQueue, sharesBench, "w2-share-history"), Unit: "",
				Versus: base(pkgQueue, sharesBench, "w2-share-weights", "2 / (1 + 2)")},
			{What: "pool utilization, with usage history", Ref: r(pkgQueue, sharesBench, "util-history"), Unit: "",
				Versus: base(pkgQueue, sharesBench, "util-nohistory", "no history")},
			{What: "pods evicted by a reclaim, no history", Ref: r(pkgQueue, sharesBench, "evicted-nohistory"), Unit: ""},
		}},
	{Title: "Accounting overhead (issue #16)", Note: "The accountant's own work per sample at 100 teams and 10,000 bound pods (whole, MIG, reservations, shares), " +
		"a week of hourly buckets per team; its per-team pod list and ConfigMap patch cost API-server time, not this.",
		Figures: []figure{
			{What: "one sample, 100 teams / 10,000 pods", Ref: r(pkgAcct, "BenchmarkSample", "ms/sample"), Unit: "ms"},
			{What: "share of one core at the default 1-minute interval", Ref: r(pkgAcct, "BenchmarkSample", "cpu-%-of-interval"), Unit: "%", Versus: self("the sampling interval")},
		}},
}
