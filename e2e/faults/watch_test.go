package faults_test

import (
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// shareWatcher sees every pod event of the host (its watch survives API server
// restarts by relisting) and, at each, sums the GPU shares assigned on every
// GPU: a share pod counts from the moment it names a reservation (label
// share-group) until it ends, ungated pods even while terminating, as
// bench.CheckInvariants counts them. A GPU is the UUID the pod or its
// reservation carries (so two reservations on one GPU add up), else the
// reservation itself.
type shareWatcher struct {
	mu         sync.Mutex
	pods       map[string]*corev1.Pod // namespace/name
	events     int
	maxUnits   int
	violations []string
	stop       chan struct{}
}

func watchShares() (*shareWatcher, error) {
	w := &shareWatcher{pods: map[string]*corev1.Pod{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactory(env.cp.Client, 0)
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.seen(o, false) },
		UpdateFunc: func(_, o any) { w.seen(o, false) },
		DeleteFunc: func(o any) { w.seen(o, true) },
	}); err != nil {
		return nil, err
	}
	f.Start(w.stop)
	for typ, ok := range f.WaitForCacheSync(w.stop) {
		if !ok {
			return nil, fmt.Errorf("watch of %v never synced", typ)
		}
	}
	return w, nil
}

func (w *shareWatcher) close() { close(w.stop) }

func (w *shareWatcher) seen(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	if deleted {
		delete(w.pods, key)
	} else {
		w.pods[key] = p
	}
	w.events++
	w.check()
}

// check sums the shares per GPU now; called with mu held.
func (w *shareWatcher) check() {
	units := map[string]int{}
	holders := map[string][]string{}
	for _, p := range w.pods {
		group := p.Labels[contract.LabelShareGroup]
		if p.Labels[contract.LabelGPUShare] != "true" || group == "" ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed ||
			(bench.Gated(p) && p.DeletionTimestamp != nil) {
			continue
		}
		u, err := strconv.Atoi(p.Annotations[contract.AnnotationShareUnits])
		if err != nil {
			w.violations = append(w.violations, fmt.Sprintf("pod %s/%s in group %s has units %q", p.Namespace, p.Name, group, p.Annotations[contract.AnnotationShareUnits]))
			continue
		}
		gpu := p.Annotations[contract.AnnotationGPUUUID]
		if r := w.pods[p.Namespace+"/"+group]; gpu == "" && r != nil {
			gpu = r.Annotations[contract.AnnotationGPUUUID]
		}
		if gpu == "" {
			gpu = "reservation " + p.Namespace + "/" + group
		}
		units[gpu] += u
		holders[gpu] = append(holders[gpu], fmt.Sprintf("%s/%s=%d", p.Namespace, p.Name, u))
	}
	for gpu, u := range units {
		w.maxUnits = max(w.maxUnits, u)
		if u > gpushare.UnitsPerGPU && len(w.violations) < 20 {
			w.violations = append(w.violations, fmt.Sprintf("event %d: GPU %s holds %d units (> %d): %v", w.events, gpu, u, gpushare.UnitsPerGPU, holders[gpu]))
		}
	}
}

// report is what the watcher saw: events, the largest Σ on one GPU (in GPUs),
// and every instant Σ went over one GPU.
func (w *shareWatcher) report() (events int, maxGPU float64, violations []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events, float64(w.maxUnits) / gpushare.UnitsPerGPU, append([]string(nil), w.violations...)
}
