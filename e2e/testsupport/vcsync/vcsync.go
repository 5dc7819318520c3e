package vcsync

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/loft-sh/vcluster/pkg/controllers/resources/pods"
	"github.com/loft-sh/vcluster/pkg/scheme"
	"github.com/loft-sh/vcluster/pkg/specialservices"
	"github.com/loft-sh/vcluster/pkg/syncer/synccontext"
	syncertesting "github.com/loft-sh/vcluster/pkg/syncer/testing"
	syncertypes "github.com/loft-sh/vcluster/pkg/syncer/types"
	testingutil "github.com/loft-sh/vcluster/pkg/util/testing"
	"github.com/loft-sh/vcluster/pkg/util/translate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// Defaults for the fields of VCluster left empty.
const (
	// DefaultHostVersion is the host's Kubernetes version: the one gpuvc's local
	// control plane runs. vCluster gates some of its update path on it (in-place
	// resize from 1.35).
	DefaultHostVersion = localcluster.KubernetesVersion
	// DefaultKubernetesIP and DefaultDNSIP are the ClusterIPs of the vCluster's
	// Service and of its kube-dns Service on the host (10.96.0.0/12, localcp's
	// service range). vCluster writes them into host pods (hostAliases, dnsConfig).
	DefaultKubernetesIP = "10.96.200.1"
	DefaultDNSIP        = "10.96.200.10"
)

// LabelNamespaceName is the label the API server puts on every namespace; the
// virtual namespaces vcsync creates carry it too, and vCluster copies namespace
// labels onto host pods.
const LabelNamespaceName = "kubernetes.io/metadata.name"

// VCluster is one team's virtual cluster as its pod syncer sees it.
type VCluster struct {
	// Name is the vCluster name (its Helm release): host pods are named
	// <name>-x-<namespace>-x-<Name> and labelled vcluster.loft.sh/managed-by=<Name>.
	Name string
	// HostNamespace is the namespace the vCluster runs in and syncs pods into.
	HostNamespace string
	// Values are the Helm values the vCluster is installed with, deep-merged over
	// the chart's defaults as vCluster reads its config (e.g. the output of
	// vclusters.HelmValues). Nil: the chart's defaults.
	Values map[string]any
	// HostVersion is the host's Kubernetes version, e.g. "v1.36.3". Empty:
	// DefaultHostVersion.
	HostVersion string
	// Nodes are the nodes the virtual cluster shows (sync.fromHost.nodes). With a
	// node selector configured, vCluster syncs a pod naming a node only if the
	// virtual cluster has that node; a synced pod bound on the host is only
	// updated while its node is here.
	Nodes []corev1.Node
	// KubernetesIP and DNSIP are the ClusterIPs of the vCluster's Service and of
	// its kube-dns Service on the host. Empty: the defaults above.
	KubernetesIP, DNSIP string
	// Host, when set, receives every write vCluster sends to the host API server
	// (creates, updates, patches, subresources) in place of the fake host client,
	// and its answers are what vCluster sees: point it at a real API server with
	// the vCluster's identity to let admission decide. Reads still come from the
	// fake host client (vCluster's informer cache), which holds the objects given
	// to Sync and the pods Host created.
	Host client.Client
}

// Write is one request vCluster's syncer sent to an API server.
type Write struct {
	// Verb is create, update or patch.
	Verb string
	// Subresource is "", "status", "resize", ...
	Subresource string
	// Object is the request's object: the body of a create or update, the target
	// of a patch.
	Object client.Object
	// PatchType and Patch are the body of a patch.
	PatchType types.PatchType
	Patch     []byte
	// Answer is the object the API server answered with, nil if it refused; Err
	// is its refusal.
	Answer client.Object
	Err    error
}

// Result is what one call of vCluster's pod syncer did.
type Result struct {
	// Host and Virtual are the writes to the host and to the virtual API server, in
	// the order they were sent.
	Host, Virtual []Write
	// Requeue is set when the syncer asked to run again later without finishing
	// (e.g. a node the virtual cluster does not show).
	Requeue bool
	// Err is the error the syncer returned; vCluster records it as a SyncError
	// event on the virtual pod and retries with backoff.
	Err error
	// CachedHost and CachedVirtual are what vCluster's object cache holds for the
	// pair after the call (nil: nothing written): the HostOld and VirtualOld of
	// its next sync.
	CachedHost, CachedVirtual *corev1.Pod
}

// Created returns the pod vCluster created on the host, or nil.
func (r *Result) Created() *corev1.Pod { return r.lastPod(r.Host, "create", "") }

// Updated returns the last pod vCluster sent as an update of the host pod (the
// whole object, with the resourceVersion it read), or nil.
func (r *Result) Updated() *corev1.Pod { return r.lastPod(r.Host, "update", "") }

// VirtualUpdated returns the last virtual pod vCluster wrote (metadata and spec),
// or nil.
func (r *Result) VirtualUpdated() *corev1.Pod { return r.lastPod(r.Virtual, "update", "") }

// LastVirtual returns the virtual pod as the virtual API server answered
// vCluster's last write of it (metadata, spec or status), or nil.
func (r *Result) LastVirtual() *corev1.Pod {
	for i := len(r.Virtual) - 1; i >= 0; i-- {
		if p, ok := r.Virtual[i].Answer.(*corev1.Pod); ok {
			return p.DeepCopy()
		}
	}
	return nil
}

// HostWrites returns the host writes to a subresource ("" for the pod itself).
func (r *Result) HostWrites(subresource string) []Write {
	var out []Write
	for _, w := range r.Host {
		if w.Subresource == subresource {
			out = append(out, w)
		}
	}
	return out
}

func (r *Result) lastPod(writes []Write, verb, subresource string) *corev1.Pod {
	for i := len(writes) - 1; i >= 0; i-- {
		w := writes[i]
		if p, ok := w.Object.(*corev1.Pod); ok && w.Verb == verb && w.Subresource == subresource {
			return p.DeepCopy()
		}
	}
	return nil
}

// Event is a sync of an existing virtual pod with its existing host pod, as
// vCluster's sync controller hands it to the pod syncer: the objects now and as
// its cache last saw them (its "old" objects). The pods are not modified.
type Event struct {
	// VirtualOld nil: Virtual (the virtual pod did not change).
	VirtualOld, Virtual *corev1.Pod
	// HostOld nil: Host (what vCluster does after a restart, when its cache is
	// empty). After vCluster created a pod, its cache holds the pod it sent, with
	// the resourceVersion and UID of the API server's answer.
	HostOld, Host *corev1.Pod
}

// mu serialises runs: vCluster keeps its name, namespace translator and DNS
// resolver in package variables.
var mu sync.Mutex

// Translate returns the host pod vCluster creates for virtual (its SyncToHost
// path): the request body it sends to the host API server. The test fails if
// vCluster returns an error or creates no pod.
func Translate(t *testing.T, vc VCluster, virtual *corev1.Pod) *corev1.Pod {
	t.Helper()
	res := SyncToHost(t, vc, virtual)
	if res.Err != nil {
		t.Fatalf("vCluster's pod syncer failed on %s/%s: %v", virtual.Namespace, virtual.Name, res.Err)
	}
	p := res.Created()
	if p == nil {
		t.Fatalf("vCluster created no host pod for %s/%s (requeue: %v)", virtual.Namespace, virtual.Name, res.Requeue)
	}
	return p
}

// SyncToHost runs vCluster's SyncToHost for a virtual pod that has no host pod
// yet. Virtual is taken as the virtual API server stored it: pass a pod with the
// API server's defaults applied (dnsPolicy, requests from limits, ...) for the
// host pod vCluster would really create. A missing namespace becomes "default",
// a missing UID one derived from namespace and name. Pods with a service account
// token volume are not supported (vCluster would request the token from the
// virtual API server).
func SyncToHost(t *testing.T, vc VCluster, virtual *corev1.Pod) *Result {
	t.Helper()
	vPod := normalize(virtual)
	keys := podKeys{
		host:    types.NamespacedName{Namespace: vc.HostNamespace, Name: HostName(vc, vPod.Name, vPod.Namespace)},
		virtual: client.ObjectKeyFromObject(vPod),
	}
	return vc.run(t, keys, nil, []client.Object{vPod}, func(ctx *synccontext.SyncContext, s syncertypes.Sync[client.Object], c clients) (result, error) {
		stored, err := c.virtualPod(ctx, vPod)
		if err != nil {
			return result{}, err
		}
		r, err := s.SyncToHost(ctx, synccontext.NewSyncToHostEvent[client.Object](stored))
		return result{requeue: r.Requeue || r.RequeueAfter > 0}, err //nolint:staticcheck // Requeue is what vCluster sets
	})
}

// Sync runs vCluster's update path (the pod syncer's Sync) for an existing pair
// of pods and returns what it wrote: the host pod update (Result.Updated), the
// in-place resize patches (Result.HostWrites("resize")) and the virtual pod
// written back. The host pod should be as the host API server returned it
// (resourceVersion included): Result.Updated then carries that resourceVersion
// and can be sent to the real API server as vCluster would.
func Sync(t *testing.T, vc VCluster, ev Event) *Result {
	t.Helper()
	if ev.Virtual == nil || ev.Host == nil {
		t.Fatal("vcsync.Sync needs Event.Virtual and Event.Host")
	}
	vPod := normalize(ev.Virtual)
	vOld := vPod
	if ev.VirtualOld != nil {
		vOld = normalize(ev.VirtualOld)
	}
	hPod := ev.Host.DeepCopy()
	hOld := hPod
	if ev.HostOld != nil {
		hOld = ev.HostOld.DeepCopy()
	}
	keys := podKeys{host: client.ObjectKeyFromObject(hPod), virtual: client.ObjectKeyFromObject(vPod)}
	return vc.run(t, keys, []client.Object{hPod}, []client.Object{vPod}, func(ctx *synccontext.SyncContext, s syncertypes.Sync[client.Object], c clients) (result, error) {
		// The syncer writes with the resourceVersions of the objects it was given:
		// read them back from the fake clients, which keep the host's and assign
		// the virtual ones.
		vStored, err := c.virtualPod(ctx, vPod)
		if err != nil {
			return result{}, err
		}
		hStored := &corev1.Pod{}
		if err := c.host.Get(ctx, client.ObjectKeyFromObject(hPod), hStored); err != nil {
			return result{}, err
		}
		r, err := s.Sync(ctx, synccontext.NewSyncEventWithOld[client.Object](hOld.DeepCopy(), hStored, vOld.DeepCopy(), vStored))
		return result{requeue: r.Requeue || r.RequeueAfter > 0}, err //nolint:staticcheck // Requeue is what vCluster sets
	})
}

// HostName is vCluster's name for the host object of a namespaced virtual object.
func HostName(vc VCluster, name, namespace string) string {
	return translate.SingleNamespaceHostName(name, namespace, vc.Name)
}

// normalize completes what the virtual API server sets on every pod.
func normalize(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	if p.UID == "" {
		p.UID = types.UID(uuid.NewSHA1(uuid.NameSpaceOID, []byte(p.Namespace+"/"+p.Name)).String())
	}
	p.ResourceVersion = ""
	return p
}

type result struct{ requeue bool }

// podKeys name the host and the virtual pod of a run.
type podKeys struct{ host, virtual types.NamespacedName }

// clients are the fake clients of one run.
type clients struct {
	host, virtual *testingutil.FakeIndexClient
}

func (c clients) virtualPod(ctx *synccontext.SyncContext, p *corev1.Pod) (*corev1.Pod, error) {
	stored := &corev1.Pod{}
	if err := c.virtual.Get(ctx, client.ObjectKeyFromObject(p), stored); err != nil {
		return nil, fmt.Errorf("reading the virtual pod back: %w", err)
	}
	return stored, nil
}

// run sets vCluster's globals for vc, builds fake host and virtual clients with
// the objects vCluster expects (its Service and kube-dns Service on the host; the
// namespaces and nodes in the virtual cluster), starts the pod syncer as
// vCluster's tests do and calls sync with it.
func (vc VCluster) run(t *testing.T, keys podKeys, hostObjs, virtualObjs []client.Object, sync func(*synccontext.SyncContext, syncertypes.Sync[client.Object], clients) (result, error)) *Result {
	t.Helper()
	return vc.runSyncer(t, pods.New, keys, hostObjs, virtualObjs, sync)
}

// runSyncer is run with the syncer newSyncer builds (vCluster's pod syncer for
// run, its event syncer for EventToVirtual).
func (vc VCluster) runSyncer(t *testing.T, newSyncer func(*synccontext.RegisterContext) (syncertypes.Object, error), keys podKeys, hostObjs, virtualObjs []client.Object, sync func(*synccontext.SyncContext, syncertypes.Sync[client.Object], clients) (result, error)) *Result {
	t.Helper()
	if vc.Name == "" || vc.HostNamespace == "" {
		t.Fatal("vcsync: VCluster needs Name and HostNamespace")
	}
	vConfig := vc.config(t)

	mu.Lock()
	defer mu.Unlock()
	prevTranslator, prevName, prevServices := translate.Default, translate.VClusterName, specialservices.Default
	defer func() {
		translate.Default, translate.VClusterName, specialservices.Default = prevTranslator, prevName, prevServices
	}()
	translate.VClusterName = vc.Name
	translate.Default = translate.NewSingleNamespaceTranslator(vc.HostNamespace)
	specialservices.Default = specialservices.NewDefaultServiceSyncer()

	res := &Result{}
	host := testingutil.NewFakeClient(scheme.Scheme, runtimeObjects(append(vc.hostServices(), hostObjs...))...)
	virtual := testingutil.NewFakeClient(scheme.Scheme, runtimeObjects(append(vc.virtualObjects(virtualObjs), virtualObjs...))...)
	record(host, vc.Host, &res.Host)
	record(virtual, nil, &res.Virtual)

	registerCtx, err := newRegisterContext(vc, vConfig, host, virtual)
	if err != nil {
		t.Fatalf("vCluster's register context: %v", err)
	}
	syncCtx, obj := syncertesting.FakeStartSyncer(t, registerCtx, newSyncer)
	s, ok := obj.(syncertypes.Syncer)
	if !ok {
		t.Fatalf("vCluster's syncer %T is not a syncer", obj)
	}
	r, err := sync(syncCtx, s.Syncer(), clients{host: host, virtual: virtual})
	res.Requeue, res.Err = r.requeue, err
	res.CachedHost, res.CachedVirtual = cachedPods(syncCtx, keys.host, keys.virtual)
	return res
}

// hostServices are the Services vCluster reads on the host to write its
// Kubernetes and DNS addresses into pods.
func (vc VCluster) hostServices() []client.Object {
	kubeIP, dnsIP := vc.KubernetesIP, vc.DNSIP
	if kubeIP == "" {
		kubeIP = DefaultKubernetesIP
	}
	if dnsIP == "" {
		dnsIP = DefaultDNSIP
	}
	dns := translate.Default.HostName(nil, specialservices.DefaultKubeDNSServiceName, specialservices.DefaultKubeDNSServiceNamespace)
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: vc.Name, Namespace: vc.HostNamespace}, Spec: corev1.ServiceSpec{ClusterIP: kubeIP}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: dns.Name, Namespace: dns.Namespace}, Spec: corev1.ServiceSpec{ClusterIP: dnsIP}},
	}
}

// virtualObjects are the namespaces of the given objects and vc's nodes.
func (vc VCluster) virtualObjects(objs []client.Object) []client.Object {
	var out []client.Object
	seen := map[string]bool{}
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{LabelNamespaceName: ns}}})
		}
	}
	for i := range vc.Nodes {
		out = append(out, vc.Nodes[i].DeepCopy())
	}
	return out
}

func runtimeObjects(objs []client.Object) []runtime.Object {
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopyObject()
	}
	return out
}

// cachedPods returns the pods vCluster's object cache holds under the keys.
func cachedPods(ctx *synccontext.SyncContext, host, virtual types.NamespacedName) (*corev1.Pod, *corev1.Pod) {
	if ctx.ObjectCache == nil {
		return nil, nil
	}
	get := func(c *synccontext.ObjectCache, key types.NamespacedName) *corev1.Pod {
		if o, ok := c.Get(key); ok {
			if p, ok := o.(*corev1.Pod); ok {
				return p.DeepCopy()
			}
		}
		return nil
	}
	return get(ctx.ObjectCache.Host(), host), get(ctx.ObjectCache.Virtual(), virtual)
}
