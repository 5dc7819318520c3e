package installer

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestDetectKueue(t *testing.T) {
	kinds := func(gv string, names ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: gv}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
		}
		return l
	}
	all := []string{"resourceflavors", "clusterqueues", "localqueues", "workloads"}
	for name, tc := range map[string]struct {
		served     []*metav1.APIResourceList
		usable     bool
		versions   string
		messageHas string
	}{
		"none": {served: []*metav1.APIResourceList{kinds("v1", "pods")},
			messageHas: "Kueue is not installed (no kueue.x-k8s.io API): Teams with spec.queueing will not become ready; install Kueue v0.15.0 or later"},
		"v0.14 and older serve only v1beta1": {served: []*metav1.APIResourceList{kinds("kueue.x-k8s.io/v1beta1", all...)},
			versions: "v1beta1", messageHas: "Kueue serves only kueue.x-k8s.io/v1beta1, too old for gpuvc, which writes kueue.x-k8s.io/v1beta2"},
		"v0.17 serves both": {served: []*metav1.APIResourceList{kinds("kueue.x-k8s.io/v1beta1", all...), kinds("kueue.x-k8s.io/v1beta2", all...)},
			usable: true, versions: "v1beta1 v1beta2", messageHas: "Kueue found: kueue.x-k8s.io/v1beta2 served (versions v1beta1, v1beta2)"},
		"a kind missing": {served: []*metav1.APIResourceList{kinds("kueue.x-k8s.io/v1beta2", "clusterqueues", "localqueues", "workloads")},
			versions: "v1beta2", messageHas: "Kueue's kueue.x-k8s.io/v1beta2 API lacks resourceflavors"},
	} {
		t.Run(name, func(t *testing.T) {
			d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.served}}
			r, err := DetectKueue(d)
			if err != nil {
				t.Fatal(err)
			}
			if r.Usable != tc.usable || strings.Join(r.Versions, " ") != tc.versions || !strings.Contains(r.Message, tc.messageHas) {
				t.Errorf("got usable=%v versions=%v message %q; want usable=%v versions %q message with %q", r.Usable, r.Versions, r.Message, tc.usable, tc.versions, tc.messageHas)
			}
		})
	}
}

func TestParseKueueMode(t *testing.T) {
	for _, ok := range []string{"detect", "require", "off"} {
		if _, err := ParseKueueMode(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := ParseKueueMode("install"); err == nil || !strings.Contains(err.Error(), `--kueue "install": must be one of detect, require, off`) {
		t.Errorf("install: %v", err)
	}
}
