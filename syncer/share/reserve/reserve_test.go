package reserve

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nvmltest"
)

// withShutdownCount makes the mock count Shutdown calls.
func withShutdownCount(s *server.Server, n *int) *server.Server {
	s.ShutdownFunc = func() nvml.Return { *n++; return nvml.SUCCESS }
	return s
}

func TestNVMLUUID(t *testing.T) {
	tests := map[string]struct {
		gpus     int
		want     string
		wantErr  []string
		shutdown int
	}{
		"one GPU":   {gpus: 1, want: "GPU-0", shutdown: 1},
		"no GPU":    {gpus: 0, wantErr: []string{"NVML reports 0 GPUs", "exactly one", "nvidia.com/gpu: 1"}, shutdown: 1},
		"two GPUs":  {gpus: 2, wantErr: []string{"NVML reports 2 GPUs", "exactly one"}, shutdown: 1},
		"eight GPU": {gpus: 8, wantErr: []string{"NVML reports 8 GPUs"}, shutdown: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			shutdowns := 0
			got, err := NVMLUUID(withShutdownCount(nvmltest.A100s(t, tc.gpus), &shutdowns))
			if tc.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error = %v, want it to contain %q", err, w)
				}
			}
			if got != tc.want {
				t.Errorf("UUID = %q, want %q", got, tc.want)
			}
			if shutdowns != tc.shutdown {
				t.Errorf("Shutdown called %d times, want %d", shutdowns, tc.shutdown)
			}
		})
	}
}

func TestNVMLUUIDFailures(t *testing.T) {
	tests := map[string]struct {
		lib      nvml.Interface
		want     string
		noDriver bool
	}{
		"no driver": {lib: nvmltest.NoDriver(),
			want: "NVIDIA driver not found", noDriver: true},
		"init fails": {lib: nvmltest.InitFails(nvml.ERROR_DRIVER_NOT_LOADED),
			want: "NVML init: "},
		"count fails": {lib: &mock.Interface{
			InitFunc:           func() nvml.Return { return nvml.SUCCESS },
			ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
			DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN },
		}, want: "NVML device count: "},
		"UUID fails": {lib: &mock.Interface{
			InitFunc:           func() nvml.Return { return nvml.SUCCESS },
			ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
			DeviceGetCountFunc: func() (int, nvml.Return) { return 1, nvml.SUCCESS },
			DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) {
				return &mock.Device{GetUUIDFunc: func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }}, nvml.SUCCESS
			},
		}, want: "NVML device 0 UUID: "},
		"unimplemented call panics": {lib: &mock.Interface{
			InitFunc:     func() nvml.Return { return nvml.SUCCESS },
			ShutdownFunc: func() nvml.Return { return nvml.SUCCESS },
		}, want: "NVML call panicked"},
		"no library": {lib: nil, want: "no NVML library"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NVMLUUID(tc.lib)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if errors.Is(err, inventory.ErrNoDriver) != tc.noDriver {
				t.Errorf("errors.Is(err, ErrNoDriver) = %v, want %v", !tc.noDriver, tc.noDriver)
			}
		})
	}
}

func TestVisibleDevicesUUID(t *testing.T) {
	tests := map[string]struct {
		value   string
		set     bool
		want    string
		wantErr string
	}{
		"one GPU":      {value: "GPU-sim-1234", set: true, want: "GPU-sim-1234"},
		"one MIG":      {value: " MIG-sim-99 ", set: true, want: "MIG-sim-99"},
		"unset":        {wantErr: "NVIDIA_VISIBLE_DEVICES is not set"},
		"empty":        {value: "", set: true, wantErr: `NVIDIA_VISIBLE_DEVICES="" names no GPU`},
		"void":         {value: "void", set: true, wantErr: `"void" names no GPU`},
		"all":          {value: "all", set: true, wantErr: "NVIDIA_VISIBLE_DEVICES=all"},
		"two":          {value: "GPU-a,GPU-b", set: true, wantErr: "NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b names 2 GPUs"},
		"index":        {value: "0", set: true, wantErr: `"0" is not a GPU UUID`},
		"empty second": {value: "GPU-a,", set: true, wantErr: "names 2 GPUs"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := VisibleDevicesUUID(tc.value, tc.set)
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("UUID = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDetectUUID(t *testing.T) {
	env := func(v string, set bool) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k != contract.EnvVisibleDevices {
				t.Errorf("looked up %s", k)
			}
			return v, set
		}
	}
	tests := map[string]struct {
		lib      nvml.Interface
		lookup   func(string) (string, bool)
		want     string
		wantErr  string
		noDriver bool
	}{
		"NVML wins":                   {lib: nvmltest.A100s(t, 1), lookup: env("GPU-sim-x", true), want: "GPU-0"},
		"NVML errors are NVML's":      {lib: nvmltest.A100s(t, 2), lookup: env("GPU-sim-x", true), wantErr: "NVML reports 2 GPUs"},
		"no driver, simulated GPU":    {lib: nvmltest.NoDriver(), lookup: env("GPU-sim-1234", true), want: "GPU-sim-1234"},
		"no driver, simulated MIG":    {lib: nvmltest.NoDriver(), lookup: env("MIG-sim-1234", true), want: "MIG-sim-1234"},
		"no driver, two simulated":    {lib: nvmltest.NoDriver(), lookup: env("GPU-sim-a,GPU-sim-b", true), wantErr: "names 2 GPUs"},
		"no driver, real UUID in env": {lib: nvmltest.NoDriver(), lookup: env("GPU-0d7a2c5e", true), wantErr: "NVIDIA driver not found", noDriver: true},
		"no driver, env unset":        {lib: nvmltest.NoDriver(), lookup: env("", false), wantErr: "NVIDIA driver not found", noDriver: true},
		"no driver, all":              {lib: nvmltest.NoDriver(), lookup: env("all", true), wantErr: "NVIDIA driver not found", noDriver: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := DetectUUID(tc.lib, tc.lookup)
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if errors.Is(err, inventory.ErrNoDriver) != tc.noDriver {
				t.Errorf("errors.Is(err, ErrNoDriver) = %v, want %v", !tc.noDriver, tc.noDriver)
			}
			if got != tc.want {
				t.Errorf("UUID = %q, want %q", got, tc.want)
			}
		})
	}
}

// A UUID already recorded that is not the container's own is refused, never
// kept: a simulated one made up by the share controller included (issue 25: a
// share was told it instead of the device the kubelet gave).
func TestAnnotateRecordedUUID(t *testing.T) {
	tests := map[string]struct {
		recorded, allocated string
		want                string
		wantErr             string
	}{
		"same":                      {"GPU-0", "GPU-0", "GPU-0", ""},
		"both simulated":            {"GPU-sim-node-0", "GPU-sim-1a2b", "", "already records gpuvc.dev/gpu-uuid=GPU-sim-node-0 but this container holds GPU GPU-sim-1a2b"},
		"simulated recorded, real":  {"GPU-sim-node-0", "GPU-0", "", "refusing to change it"},
		"real recorded, simulated":  {"GPU-1", "GPU-sim-1a2b", "", "refusing to change it"},
		"real recorded, other real": {"GPU-1", "GPU-0", "", "already records gpuvc.dev/gpu-uuid=GPU-1 but this container holds GPU GPU-0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := reservationPod("ns", "p")
			pod.Annotations = map[string]string{contract.AnnotationGPUUUID: tc.recorded}
			client := fake.NewClientset(pod)
			err := Annotate(context.Background(), client, "ns", "p", tc.allocated)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if got.Annotations[contract.AnnotationGPUUUID] != tc.want {
				t.Errorf("annotation = %q, want %q", got.Annotations[contract.AnnotationGPUUUID], tc.want)
			}
		})
	}
}

// A concurrent writer between Annotate's read and its patch makes the patch
// conflict; Annotate reads again and applies its rules to what the other
// writer recorded: another GPU, simulated or not, is refused and left.
func TestAnnotateConcurrentWriter(t *testing.T) {
	tests := map[string]struct {
		theirs, mine string
		want         string
		wantErr      string
	}{
		"simulated: refused, the first writer's stays": {"GPU-sim-node-0", "GPU-sim-1a2b", "GPU-sim-node-0", "refusing to change it"},
		"real: refused": {"GPU-1", "GPU-0", "GPU-1", "refusing to change it"},
		"same UUID":     {"GPU-0", "GPU-0", "GPU-0", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(reservationPod("ns", "p"))
			patches := 0
			client.PrependReactor("patch", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
				patches++
				if patches > 1 {
					return false, nil, nil
				}
				// The other writer lands first; the API server refuses the stale patch.
				pod, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "p")
				if err != nil {
					return true, nil, err
				}
				p := pod.(*corev1.Pod).DeepCopy()
				p.Annotations = map[string]string{contract.AnnotationGPUUUID: tc.theirs}
				if err := client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "ns"); err != nil {
					return true, nil, err
				}
				return true, nil, apierrors.NewConflict(corev1.Resource("pods"), "p", errors.New("the object has been modified"))
			})
			err := Annotate(context.Background(), client, "ns", "p", tc.mine)
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			got, _ := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if got.Annotations[contract.AnnotationGPUUUID] != tc.want {
				t.Errorf("annotation = %q, want %q", got.Annotations[contract.AnnotationGPUUUID], tc.want)
			}
			if patches != 1 {
				t.Errorf("%d patches, want only the refused one", patches)
			}
		})
	}
}

// Transient patch failures are retried; final ones are reported with context.
func TestAnnotatePatchFailures(t *testing.T) {
	tests := map[string]struct {
		failures int
		err      error
		wantErr  string
		patches  int
	}{
		"transient then fine": {failures: 2, err: apierrors.NewServiceUnavailable("busy"), patches: 3},
		"forbidden":           {failures: 9, err: apierrors.NewForbidden(corev1.Resource("pods"), "p", errors.New("no")), wantErr: "annotating pod ns/p with gpuvc.dev/gpu-uuid=GPU-0: ", patches: 1},
		"always busy":         {failures: 9, err: apierrors.NewServiceUnavailable("busy"), wantErr: "busy", patches: 4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset(reservationPod("ns", "p"))
			patches := 0
			client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				patches++
				if patches <= tc.failures {
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			err := Annotate(context.Background(), client, "ns", "p", "GPU-0")
			if tc.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if patches != tc.patches {
				t.Errorf("%d patches, want %d", patches, tc.patches)
			}
		})
	}
}

func reservationPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-1"}}
}

// Run annotates the pod, then blocks until its context ends and returns nil.
func TestRunAnnotatesAndHolds(t *testing.T) {
	client := fake.NewClientset(reservationPod("kai-resource-reservation", "gpu-reservation-0"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := client.CoreV1().Pods("kai-resource-reservation").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Client: client, Namespace: "kai-resource-reservation", Name: "gpu-reservation-0",
			UUID: func() (string, error) { return NVMLUUID(nvmltest.A100s(t, 1)) },
		})
	}()
	deadline := time.After(20 * time.Second)
	for annotated := false; !annotated; {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			annotated = ok && p.Annotations[contract.AnnotationGPUUUID] == "GPU-0"
		case err := <-done:
			t.Fatalf("Run returned %v before being cancelled", err)
		case <-deadline:
			t.Fatal("the pod was never annotated")
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while it should hold the GPU", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v after cancel, want nil", err)
		}
	case <-deadline:
		t.Fatal("Run did not return after cancel")
	}
}

func TestRunFailures(t *testing.T) {
	tests := map[string]struct {
		opts Options
		want string
	}{
		"no identity": {Options{UUID: func() (string, error) { return "GPU-0", nil }}, "POD_NAMESPACE and POD_NAME"},
		"no GPU": {Options{Namespace: "ns", Name: "p", UUID: func() (string, error) { return NVMLUUID(nvmltest.A100s(t, 0)) }},
			"finding the reserved GPU: NVML reports 0 GPUs"},
		"pod missing": {Options{Namespace: "ns", Name: "gone", UUID: func() (string, error) { return "GPU-0", nil }},
			"pod ns/gone not found"},
		"other GPU recorded": {Options{Namespace: "ns", Name: "taken", UUID: func() (string, error) { return "GPU-0", nil }},
			"already records gpuvc.dev/gpu-uuid=GPU-sim-n-0 but this container holds GPU GPU-0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			taken := reservationPod("ns", "taken")
			taken.Annotations = map[string]string{contract.AnnotationGPUUUID: "GPU-sim-n-0"}
			tc.opts.Client = fake.NewClientset(reservationPod("ns", "p"), taken)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := Run(ctx, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want %q", err, tc.want)
			}
		})
	}
}
