package share

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// Builders of host pods as the webhook and the controller leave them.

var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func resPod(name, node, uuid string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "team-a", UID: types.UID("uid-" + name),
		Labels:      map[string]string{contract.LabelRole: contract.RoleReservation, contract.LabelShareGroup: name},
		Annotations: map[string]string{},
	}}
	p.Spec.NodeName = node
	if uuid != "" {
		p.Annotations[contract.AnnotationGPUUUID] = uuid
	}
	return p
}

// sharePodObj is a share pod created at second sec; group/units are its
// assignment record ("" and 0: none); gated says whether the gate is still on.
func sharePodObj(name string, sec int, fraction string, group string, units int, isGated bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "team-a", UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(sec) * time.Second)),
		Labels:            map[string]string{contract.LabelGPUShare: "true"},
		Annotations:       map[string]string{contract.AnnotationShareConfigMap: contract.ShareConfigMapPrefix + name},
	}}
	if fraction[len(fraction)-1] == 'M' {
		p.Annotations[contract.AnnotationGPUMemory] = fraction[:len(fraction)-1]
	} else {
		p.Annotations[contract.AnnotationGPUFraction] = fraction
	}
	if group != "" {
		p.Labels[contract.LabelShareGroup] = group
		p.Annotations[contract.AnnotationShareUnits] = strconv.Itoa(units)
	}
	if isGated {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: contract.GateGPUShare}}
	}
	return p
}

// view summarises a state: reservation → pods with units; pending, lost and
// invalid pod names.
type view struct {
	Shares  map[string]map[string]int
	Pending []string
	Lost    []string
	Invalid []string
}

func viewOf(st *teamState) view {
	v := view{Shares: map[string]map[string]int{}}
	for _, r := range st.reservations {
		m := map[string]int{}
		for _, s := range r.shares {
			m[s.pod.Name] = s.units
		}
		v.Shares[r.name] = m
	}
	for _, s := range st.pending {
		if s.res == nil {
			v.Pending = append(v.Pending, s.pod.Name)
		}
	}
	for _, s := range st.lost {
		v.Lost = append(v.Lost, s.pod.Name)
	}
	for _, i := range st.invalid {
		v.Invalid = append(v.Invalid, i.pod.Name)
	}
	return v
}

func TestObserve(t *testing.T) {
	deleting := func(p corev1.Pod) corev1.Pod { p.DeletionTimestamp = &metav1.Time{Time: epoch}; return p }
	phase := func(p corev1.Pod, ph corev1.PodPhase) corev1.Pod { p.Status.Phase = ph; return p }
	cases := map[string]struct {
		pods    []corev1.Pod
		maxPods int
		want    view
	}{
		"records are restored": {
			pods: []corev1.Pod{
				resPod("r1", "a100-0", "GPU-1"),
				sharePodObj("a", 1, "0.3", "r1", 3000, false),
				sharePodObj("b", 2, "0.3", "r1", 3000, true),
				sharePodObj("c", 3, "0.5", "", 0, true),
			},
			want: view{Shares: map[string]map[string]int{"r1": {"a": 3000, "b": 3000}}, Pending: []string{"c"}},
		},
		// A damaged record never puts a GPU over 1.0: running pods are facts,
		// gated ones beyond room are placed again, oldest first kept.
		"overfull gated records are dropped": {
			pods: []corev1.Pod{
				resPod("r1", "a100-0", "GPU-1"),
				sharePodObj("late", 5, "0.5", "r1", 5000, true),
				sharePodObj("run", 9, "0.4", "r1", 4000, false),
				sharePodObj("early", 1, "0.5", "r1", 5000, true),
			},
			want: view{Shares: map[string]map[string]int{"r1": {"run": 4000, "early": 5000}}, Pending: []string{"late"}},
		},
		"pods per GPU bound": {
			maxPods: 2,
			pods: []corev1.Pod{
				resPod("r1", "a100-0", "GPU-1"),
				sharePodObj("a", 1, "0.1", "r1", 1000, true),
				sharePodObj("b", 2, "0.1", "r1", 1000, true),
				sharePodObj("c", 3, "0.1", "r1", 1000, true),
			},
			want: view{Shares: map[string]map[string]int{"r1": {"a": 1000, "b": 1000}}, Pending: []string{"c"}},
		},
		"record on a deleted or missing reservation": {
			pods: []corev1.Pod{
				deleting(resPod("r1", "a100-0", "GPU-1")),
				sharePodObj("gated", 1, "0.3", "r1", 3000, true),
				sharePodObj("gone", 2, "0.3", "r9", 3000, true),
				sharePodObj("orphan", 3, "0.3", "r9", 3000, false),
			},
			want: view{Shares: map[string]map[string]int{"r1": {}}, Pending: []string{"gated", "gone"}, Lost: []string{"orphan"}},
		},
		"finished and deleted gated pods hold nothing": {
			pods: []corev1.Pod{
				resPod("r1", "a100-0", "GPU-1"),
				phase(sharePodObj("done", 1, "0.5", "r1", 5000, false), corev1.PodSucceeded),
				deleting(sharePodObj("cancelled", 2, "0.5", "r1", 5000, true)),
				deleting(sharePodObj("stopping", 3, "0.5", "r1", 5000, false)),
			},
			want: view{Shares: map[string]map[string]int{"r1": {"stopping": 5000}}},
		},
		"damaged units of a running pod are recomputed": {
			pods: []corev1.Pod{
				resPod("r1", "a100-0", "GPU-1"),
				func() corev1.Pod {
					p := sharePodObj("m", 1, "40960M", "r1", 0, false)
					p.Annotations[contract.AnnotationShareUnits] = "lots"
					return p
				}(),
			},
			want: view{Shares: map[string]map[string]int{"r1": {"m": 5000}}},
		},
		"unreadable request": {
			pods: []corev1.Pod{func() corev1.Pod {
				p := sharePodObj("bad", 1, "0.5", "", 0, true)
				p.Annotations[contract.AnnotationGPUFraction] = "lots"
				return p
			}()},
			want: view{Shares: map[string]map[string]int{}, Invalid: []string{"bad"}},
		},
		"no share ConfigMap named": {
			pods: []corev1.Pod{func() corev1.Pod {
				p := sharePodObj("nocm", 1, "0.5", "", 0, true)
				delete(p.Annotations, contract.AnnotationShareConfigMap)
				return p
			}()},
			want: view{Shares: map[string]map[string]int{}, Invalid: []string{"nocm"}},
		},
		"pods gpuvc never served are ignored": {
			pods: []corev1.Pod{sharePodObj("old", 1, "0.5", "", 0, false)},
			want: view{Shares: map[string]map[string]int{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.maxPods == 0 {
				tc.maxPods = DefaultMaxPodsPerGPU
			}
			st := observe(observation{pods: tc.pods, nodeMemory: map[string]int64{"a100-0": 81920}, estimate: 81920, maxPods: tc.maxPods})
			if diff := cmp.Diff(tc.want, viewOf(st)); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFit(t *testing.T) {
	st := observe(observation{
		pods: []corev1.Pod{
			resPod("r1", "a100-0", "GPU-1"), resPod("r2", "a100-0", "GPU-2"), resPod("r3", "", ""),
			sharePodObj("a", 1, "0.5", "r1", 5000, false),
			sharePodObj("b", 2, "0.7", "r2", 7000, false),
			sharePodObj("x", 3, "0.3", "", 0, true),
			sharePodObj("y", 4, "0.3", "", 0, true),
			sharePodObj("z", 5, "0.5", "", 0, true),
			sharePodObj("m", 6, "40960M", "", 0, true),
		},
		nodeMemory: map[string]int64{"a100-0": 81920}, estimate: 81920, maxPods: 8,
	})
	var got []string
	for _, sp := range st.pending {
		r, units, err := st.fit(sp, 8)
		if err != nil {
			got = append(got, sp.pod.Name+":"+err.Error())
			continue
		}
		st.assign(sp, r, units)
		got = append(got, sp.pod.Name+"→"+r.name+"/"+strconv.Itoa(units))
	}
	// Best fit: x fills r2 to 1.0; y goes to r1 (0.8), z to the empty r3, the
	// 0.5 GPU of memory to r3 too (r1 has 0.2 left).
	want := []string{"x→r2/3000", "y→r1/3000", "z→r3/5000", "m→r3/5000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placements (-want +got):\n%s", diff)
	}
	_, _, err := st.fit(&sharePod{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, req: gpushare.Fraction(0.3)}, 8)
	if !errors.Is(err, gpushare.ErrNoFit) {
		t.Errorf("full team: %v, want ErrNoFit", err)
	}
}

// Without a known GPU memory (no nvidia.com/gpu.memory label) fractions still
// share a reservation; memory shares wait for it.
func TestFitUnknownMemory(t *testing.T) {
	st := observe(observation{
		pods:    []corev1.Pod{resPod("r1", "", ""), sharePodObj("a", 1, "0.5", "", 0, true), sharePodObj("m", 2, "20480M", "", 0, true)},
		maxPods: 8,
	})
	if r, units, err := st.fit(st.pending[0], 8); err != nil || r.name != "r1" || units != 5000 {
		t.Errorf("fraction: %v %d %v, want r1 5000", r, units, err)
	}
	if _, _, err := st.fit(st.pending[1], 8); !errors.Is(err, gpushare.ErrNoFit) {
		t.Errorf("memory share: %v, want ErrNoFit", err)
	}
	if st.unknownMemory() == nil {
		t.Error("unknownMemory() = nil")
	}
}

func TestPortion(t *testing.T) {
	for units, want := range map[int]string{0: "0", 1: "0.0001", 3000: "0.3", 3334: "0.3334", 10000: "1"} {
		if got := portion(units); got != want {
			t.Errorf("portion(%d) = %q, want %q", units, got, want)
		}
	}
}
