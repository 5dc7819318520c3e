package teamqueue_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// dumpWorkloadsOnFailure logs the Workloads of ns (owner, queue, status) if the
// test fails: what Kueue decided, for the failure message.
func dumpWorkloadsOnFailure(t testing.TB, ns string) {
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorkloads(t, ns)
		}
	})
}

func dumpWorkloads(t testing.TB, ns string) {
	l, err := dc.Resource(teamqueue.GroupVersion.WithResource("workloads")).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Log(err)
		return
	}
	for _, w := range l.Items {
		b, _ := yaml.Marshal(map[string]any{"meta": w.Object["metadata"].(map[string]any)["ownerReferences"], "spec": w.Object["spec"].(map[string]any)["queueName"], "status": w.Object["status"]})
		t.Log(string(b))
	}
}
