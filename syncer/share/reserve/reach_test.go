package reserve

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuvc/gpuvc/api/contract"
)

// refused is the error client-go returns when nothing accepts the connection.
func refused(verb string) error {
	return &url.Error{Op: verb, URL: "https://10.96.0.1:443/api/v1/namespaces/ns/pods/p", Err: syscall.ECONNREFUSED}
}

// A reservation pod whose NetworkPolicy is not applied yet cannot reach the API
// server: Annotate waits for it instead of failing (an exit would cost a
// container restart back-off).
func TestAnnotateWaitsForTheAPIServer(t *testing.T) {
	for verb, failures := range map[string]int{"get": 3, "patch": 2} {
		t.Run(verb, func(t *testing.T) {
			client := fake.NewClientset(reservationPod("ns", "p"))
			calls := 0
			client.PrependReactor(verb, "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= failures {
					return true, nil, refused(verb)
				}
				return false, nil, nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := Annotate(ctx, client, "ns", "p", "GPU-0"); err != nil {
				t.Fatal(err)
			}
			if calls != failures+1 {
				t.Errorf("%d %s calls, want %d", calls, verb, failures+1)
			}
			p, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Annotations[contract.AnnotationGPUUUID]; got != "GPU-0" {
				t.Errorf("annotation = %q, want GPU-0", got)
			}
		})
	}
}

// When the API server never answers, Annotate gives up when its context ends
// and says what it waited for and what to check.
func TestAnnotateGivesUpWhenTheContextEnds(t *testing.T) {
	client := fake.NewClientset(reservationPod("ns", "p"))
	client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, refused("get")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := Annotate(ctx, client, "ns", "p", "GPU-0")
	if err == nil {
		t.Fatal("Annotate succeeded without an API server")
	}
	for _, want := range []string{"could not be reached", "connection refused", "NetworkPolicy lets reservation pods reach the API server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// An answer from the API server, even a refusal, is not waited out.
func TestUnreachable(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"refused":          {refused("get"), true},
		"wrapped refused":  {errors.Join(errors.New("reading pod ns/p"), refused("get")), true},
		"client timeout":   {&url.Error{Op: "Get", URL: "https://x", Err: context.DeadlineExceeded}, true},
		"forbidden":        {apierrors.NewForbidden(corev1.Resource("pods"), "p", errors.New("no")), false},
		"service unavail.": {apierrors.NewServiceUnavailable("busy"), false},
		"plain":            {errors.New("pod ns/p not found"), false},
		"nil":              {nil, false},
	} {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("%s: unreachable(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}
