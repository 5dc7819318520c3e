package vclusters

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// makeSpec returns a valid spec for team "fraud" in pool a100; tests change what
// they are about.
func makeSpec(mutate ...func(*Spec)) Spec {
	s := Spec{
		Name:             "fraud",
		Namespace:        "team-fraud",
		Pool:             "a100",
		KubeconfigServer: "https://fraud.vc.example.com:443",
		SyncRealNodes:    true,
		MetricsProxy:     true,
	}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

func resourceList(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}
