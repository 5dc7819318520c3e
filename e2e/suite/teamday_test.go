package suite

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/syncer/claims"
)

// TestTeamMembersDay: what a team member does on an ordinary day, through the
// team's kubeconfig with kubectl and plain manifests, on the real node: a
// Deployment behind a Service reached by name over HTTP from another pod, a Job
// and a CronJob, a StatefulSet whose volume (the host's default StorageClass,
// provisioned by local-path-provisioner) keeps its data across a pod restart, a
// claim over the team's storage quota refused with the reason in the team's
// cluster, ConfigMap and Secret mounts, exec, logs, port-forward, kubectl top
// (through the host's cluster DNS and metrics-server pod), NetworkPolicies
// written in the team's cluster blocking and allowing on the host as written
// (kube-router enforcing them), and a GPU pod.
func TestTeamMembersDay(t *testing.T) {
	ctx := e2eWithin(t, 15*time.Minute)
	needsRunningContainers(t)
	if _, onKind := backend.(*kindBackend); onKind {
		// kind's offline node image carries neither local-path-provisioner's image
		// nor metrics-server; the local backend runs both (kind/localaddons).
		t.Skip("the storage provisioner and metrics-server run beside the local backend only (kind/localaddons)")
	}
	createTeam(ctx, t, "day", "--pool", realPool, "--gpus", "1", "--storage", "1Gi")
	d := &teamDay{ctx: ctx, kubeconfig: teamKubeconfig(t, "day"), dir: t.TempDir()}
	d.vc = teamClient(t, d.kubeconfig)
	// The team is Ready once its API server answers; its DNS (vCluster's
	// CoreDNS) may still be syncing and answer "bad address" for a Service
	// name, as in any cluster just made: wait for it as a user would.
	d.k(t, "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=2m")
	// The CronJob first: its first run is up to a minute away.
	d.apply(t, "cronjob", cronJob)

	t.Run("Deployment, Service, DNS and HTTP between pods", func(t *testing.T) {
		d.apply(t, "web", webApp)
		d.k(t, "rollout", "status", "deployment/web", "--timeout=2m")
		// A brand-new pod's first packets can be dropped until kube-router
		// admits its address at its next sync (docs/realnode.md), so its first
		// DNS query may go unanswered ("wget: bad address 'web'", seen on the
		// first try, fetched on the second): retry for up to 30 s, as a client
		// would, and say how many tries it took.
		out := d.runToCompletion(t, "fetch", "role: client",
			"for i in $(seq 1 30); do if timeout 5 wget -q -O- http://web/; then echo \"fetched on try $i\"; nslookup web.default.svc.cluster.local; exit $?; fi; sleep 1; done; exit 1")
		t.Log(out)
		require.Contains(t, out, "hello from web-")
		// busybox's nslookup tries every search domain and fails if one does
		// not answer: a full name.
		require.Contains(t, out, "Name:\tweb.default.svc.cluster.local")
	})

	t.Run("Job", func(t *testing.T) {
		d.apply(t, "job", job)
		d.k(t, "wait", "--for=condition=complete", "job/once", "--timeout=2m")
		require.Contains(t, d.k(t, "logs", "job/once"), "job ran")
	})

	t.Run("StatefulSet keeps its data across a pod restart", func(t *testing.T) {
		d.apply(t, "statefulset", statefulSet)
		d.k(t, "rollout", "status", "statefulset/notes", "--timeout=3m")
		first := strings.TrimSpace(d.k(t, "exec", "notes-0", "--", "cat", "/data/first-start"))
		require.NotEmpty(t, first)
		pvc, err := d.vc.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-notes-0", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "Bound", string(pvc.Status.Phase))
		d.k(t, "delete", "pod", "notes-0", "--wait=true")
		d.k(t, "rollout", "status", "statefulset/notes", "--timeout=3m")
		eventually(ctx, t, "notes-0 back and reading its volume", func(ctx context.Context) (bool, string) {
			out, err := kubectlOutput(ctx, d.kubeconfig, "exec", "notes-0", "--", "cat", "/data/first-start", "/data/starts")
			return err == nil && strings.HasPrefix(out, first) && strings.Count(out, "start") >= 2, out + fmt.Sprint(err)
		})
	})

	t.Run("a claim over the storage quota says why in the team's cluster", func(t *testing.T) {
		d.apply(t, "huge", tooBigClaim)
		eventually(ctx, t, "a warning on the claim naming the quota", func(ctx context.Context) (bool, string) {
			return warningMentions(ctx, d.vc, "huge", "exceeded quota")
		})
	})

	t.Run("a claim that cannot bind says why in the team's cluster", func(t *testing.T) {
		d.apply(t, "unbindable", unbindableClaim)
		eventually(ctx, t, "the claim's condition naming the missing StorageClass", func(ctx context.Context) (bool, string) {
			c, err := d.vc.CoreV1().PersistentVolumeClaims("default").Get(ctx, "nowhere", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == claims.ConditionType {
					return cond.Reason == "ProvisioningFailed" && strings.Contains(cond.Message, `storageclass.storage.k8s.io "nope" not found`), cond.Reason + ": " + cond.Message
				}
			}
			return false, fmt.Sprintf("phase %s, conditions %v", c.Status.Phase, c.Status.Conditions)
		})
		require.Contains(t, d.k(t, "describe", "pvc", "nowhere"), `storageclass.storage.k8s.io "nope" not found`)
	})

	t.Run("ConfigMap and Secret mounts, exec, logs", func(t *testing.T) {
		d.apply(t, "mounts", mounts)
		d.k(t, "wait", "--for=condition=Ready", "pod/mounts", "--timeout=2m")
		require.Equal(t, "blue", d.k(t, "exec", "mounts", "--", "cat", "/config/colour"))
		require.Equal(t, "s3cret", d.k(t, "exec", "mounts", "--", "cat", "/secret/password"))
		require.Contains(t, d.k(t, "logs", "mounts"), "mounted")
	})

	t.Run("port-forward", func(t *testing.T) {
		port := freePort(t)
		bins, err := localcp.EnsureBinaries(ctx, logWriter)
		require.NoError(t, err)
		pf := exec.CommandContext(ctx, bins.Kubectl, "--kubeconfig", d.kubeconfig, "port-forward", "deployment/web", strconv.Itoa(port)+":8080")
		pf.Stdout, pf.Stderr = io.Discard, io.Discard
		require.NoError(t, pf.Start())
		t.Cleanup(func() { _ = pf.Process.Kill(); _ = pf.Wait() })
		eventually(ctx, t, "the web page through port-forward", func(ctx context.Context) (bool, string) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(b), "hello from web-"), string(b)
		})
	})

	t.Run("kubectl top shows the team's pods only", func(t *testing.T) {
		eventually(ctx, t, "kubectl top pods listing web and notes-0", func(ctx context.Context) (bool, string) {
			out, err := kubectlOutput(ctx, d.kubeconfig, "top", "pods", "-A")
			return err == nil && strings.Contains(out, "web-") && strings.Contains(out, "notes-0"), out + fmt.Sprint(err)
		})
		out := d.k(t, "top", "pods", "-A")
		for _, foreign := range []string{"gpuvc-manager", "coredns-x-", "-x-default-x-", "local-path", "metrics-server"} {
			require.NotContains(t, out, foreign, "kubectl top shows a host pod")
		}
	})

	t.Run("NetworkPolicies in the team's cluster block and allow as written", func(t *testing.T) {
		d.apply(t, "other", otherApp)
		d.k(t, "rollout", "status", "deployment/other", "--timeout=2m")
		d.apply(t, "policy", clientPolicies)
		host := backend.Client()
		eventually(ctx, t, "vCluster's copies of both policies on the host", func(ctx context.Context) (bool, string) {
			for _, name := range []string{"web-from-clients", "clients-reach-web-only"} {
				if _, err := host.NetworkingV1().NetworkPolicies("team-day").Get(ctx, hostPodFor(name, "default", "day"), metav1.GetOptions{}); err != nil {
					return false, err.Error()
				}
			}
			return true, ""
		})
		eventually(ctx, t, "gpuvc's same-namespace allowance leaving web's ingress to the team's policy", func(ctx context.Context) (bool, string) {
			return allowanceSkips(ctx, host, "team-day", "app=web,vcluster.loft.sh/managed-by=day", "ingress")
		})
		friend := d.sleeper(t, "friend", "role: client")
		stranger := d.sleeper(t, "stranger", "role: stranger")
		// Each pod first proves it reaches something (a new pod's first packets
		// may be dropped until kube-router admits its address), then is refused
		// what the policies leave out: five tries a second apart, all refused.
		eventually(ctx, t, "stranger reaching other (pods no policy selects keep the namespace)", func(ctx context.Context) (bool, string) {
			out := d.probe(ctx, stranger, "http://other/")
			return out == "OPEN", out
		})
		require.Equal(t, "CLOSED", d.probe(ctx, stranger, "http://web/"), "web admits only role=client, and stranger is not")
		eventually(ctx, t, "friend reaching web by name (the policy's peer; DNS kept for every pod)", func(ctx context.Context) (bool, string) {
			out := d.probe(ctx, friend, "http://web/")
			return out == "OPEN", out
		})
		require.Equal(t, "CLOSED", d.probe(ctx, friend, "http://other/"), "friend's egress reaches only web")
	})

	t.Run("GPU pod", func(t *testing.T) {
		d.apply(t, "gpu", gpuPod)
		d.k(t, "wait", "--for=condition=Ready", "pod/trainer", "--timeout=2m")
		require.Regexp(t, "NVIDIA_VISIBLE_DEVICES=GPU-sim-", d.k(t, "logs", "trainer"))
	})

	t.Run("CronJob", func(t *testing.T) {
		eventually(ctx, t, "a completed run of the CronJob", func(ctx context.Context) (bool, string) {
			jobs, err := d.vc.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, j := range jobs.Items {
				if strings.HasPrefix(j.Name, "tick-") && j.Status.Succeeded > 0 {
					return true, ""
				}
				seen = append(seen, j.Name)
			}
			return false, fmt.Sprint("jobs: ", seen)
		})
	})
}

// teamDay is a team member at work: kubectl with the team's kubeconfig, their
// manifests written to dir (one folder for the whole test: kubectl reads a
// comma in a path as a list of files, and subtests' folders have commas).
type teamDay struct {
	ctx        context.Context
	kubeconfig string
	vc         kubernetes.Interface
	dir        string
}

// k runs kubectl with the team's kubeconfig, failing t on an error.
func (d *teamDay) k(t *testing.T, args ...string) string {
	t.Helper()
	return kubectl(d.ctx, t, d.kubeconfig, args...)
}

// apply writes manifest (IMAGE: the busybox workload image, never pulled) as
// name.yaml and applies it.
func (d *teamDay) apply(t *testing.T, name, manifest string) {
	t.Helper()
	path := filepath.Join(d.dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(manifest, "IMAGE", images.WorkloadRef)), 0o644))
	d.k(t, "apply", "-f", path)
}

// runToCompletion runs script in a pod with the given label line and returns
// its log once it has succeeded.
func (d *teamDay) runToCompletion(t *testing.T, name, label, script string) string {
	t.Helper()
	d.apply(t, name, fmt.Sprintf(oneShot, name, label, "IMAGE", strconv.Quote(script)))
	t.Cleanup(func() { _ = d.vc.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}) })
	p := waitVirtualPod(d.ctx, t, d.vc, name, finished)
	out := logs(d.ctx, t, d.vc, name)
	require.Equal(t, corev1.PodSucceeded, p.Status.Phase, "pod %s running %q failed; its log:\n%s", name, script, out)
	return out
}

// sleeper starts a pod with the given label line that waits, for probes run
// in it with exec, and returns its name once it is Ready.
func (d *teamDay) sleeper(t *testing.T, name, label string) string {
	t.Helper()
	d.apply(t, name, fmt.Sprintf(oneShot, name, label, "IMAGE", strconv.Quote("exec sleep 3600")))
	t.Cleanup(func() { _ = d.vc.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}) })
	d.k(t, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=2m")
	return name
}

// probe fetches url from pod up to five times, a second apart: OPEN on the
// first success, CLOSED when all five fail (or kubectl exec does: its error).
func (d *teamDay) probe(ctx context.Context, pod, url string) string {
	script := "for i in 1 2 3 4 5; do if timeout 3 wget -q -O- " + url + " >/dev/null 2>&1; then echo OPEN; exit 0; fi; sleep 1; done; echo CLOSED"
	out, err := kubectlOutput(ctx, d.kubeconfig, "exec", pod, "--", "sh", "-c", script)
	if err != nil {
		return fmt.Sprintf("exec: %v: %s", err, out)
	}
	return strings.TrimSpace(out)
}

// allowanceSkips reports whether none of gpuvc's same-namespace allowances of
// a direction selects the host pods matching podSelector (and there are some).
func allowanceSkips(ctx context.Context, host kubernetes.Interface, namespace, podSelector, dir string) (bool, string) {
	pods, err := host.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: podSelector})
	if err != nil || len(pods.Items) == 0 {
		return false, fmt.Sprintf("host pods %s: %d, %v", podSelector, len(pods.Items), err)
	}
	policies, err := host.NetworkingV1().NetworkPolicies(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, p := range policies.Items {
		if !strings.HasPrefix(p.Name, "gpuvc-allow-namespace-"+dir+"-") {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil {
			return false, err.Error()
		}
		for _, pod := range pods.Items {
			if sel.Matches(labels.Set(pod.Labels)) {
				return false, fmt.Sprintf("%s still selects %s", p.Name, pod.Name)
			}
		}
	}
	return true, ""
}

func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// kubectlOutput runs kubectl and returns its output and error, for polls.
func kubectlOutput(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	bins, err := localcp.EnsureBinaries(ctx, io.Discard)
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, bins.Kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// warningMentions reports whether a Warning event on the team's object name
// (namespace default) contains text.
func warningMentions(ctx context.Context, vc kubernetes.Interface, name, text string) (bool, string) {
	events, err := vc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",type=Warning"})
	if err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, e := range events.Items {
		if strings.Contains(e.Message, text) {
			return true, ""
		}
		seen = append(seen, e.Reason+": "+e.Message)
	}
	return false, fmt.Sprint(seen)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The team member's manifests (IMAGE: the busybox workload image, never pulled).
const (
	webApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: httpd
        image: IMAGE
        imagePullPolicy: Never
        command: [sh, -c, 'mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www']
        ports: [{containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`
	oneShot = `apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {%s}}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: %s, imagePullPolicy: Never, command: [sh, -c, %s]}
`
	job = `apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, image: IMAGE, imagePullPolicy: Never, command: [sh, -c, 'echo job ran']}
`
	cronJob = `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - {name: main, image: IMAGE, imagePullPolicy: Never, command: [sh, -c, 'date']}
`
	statefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: notes}
spec:
  serviceName: notes
  replicas: 1
  selector: {matchLabels: {app: notes}}
  template:
    metadata: {labels: {app: notes}}
    spec:
      containers:
      - name: main
        image: IMAGE
        imagePullPolicy: Never
        command: [sh, -c, '[ -f /data/first-start ] || date > /data/first-start; echo start >> /data/starts; exec sleep 3600']
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 100Mi}}
`
	tooBigClaim = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: huge}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
`
	unbindableClaim = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nowhere}
spec:
  storageClassName: nope
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Mi}}
`
	mounts = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {colour: blue}
---
apiVersion: v1
kind: Secret
metadata: {name: credentials}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: mounts}
spec:
  containers:
  - name: main
    image: IMAGE
    imagePullPolicy: Never
    command: [sh, -c, 'ls /config /secret && echo mounted && exec sleep 3600']
    volumeMounts: [{name: config, mountPath: /config}, {name: secret, mountPath: /secret}]
  volumes:
  - {name: config, configMap: {name: settings}}
  - {name: secret, secret: {secretName: credentials}}
`
	otherApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: other}
spec:
  replicas: 1
  selector: {matchLabels: {app: other}}
  template:
    metadata: {labels: {app: other}}
    spec:
      containers:
      - name: httpd
        image: IMAGE
        imagePullPolicy: Never
        command: [sh, -c, 'mkdir -p /tmp/www && echo "hello from $(hostname)" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www']
        ports: [{containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: other}
spec:
  selector: {app: other}
  ports: [{port: 80, targetPort: 8080}]
`
	// clientPolicies: web admits only clients; clients reach only web (DNS and
	// the team's API server stay: gpuvc keeps them for every pod).
	clientPolicies = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-from-clients}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
  ingress:
  - from: [{podSelector: {matchLabels: {role: client}}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: clients-reach-web-only}
spec:
  podSelector: {matchLabels: {role: client}}
  policyTypes: [Egress]
  egress:
  - to: [{podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 8080}]
`
	gpuPod = `apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  containers:
  - name: main
    image: IMAGE
    imagePullPolicy: Never
    command: [sh, -c, 'echo NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES; exec sleep 3600']
    resources: {limits: {nvidia.com/gpu: 1}}
`
)
