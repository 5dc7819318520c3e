package testobj

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Namespace returns a namespace with the given labels.
func Namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// Quota returns a ResourceQuota with hard limits given as name → quantity.
func Quota(name, namespace string, hard map[string]string) *corev1.ResourceQuota {
	list := corev1.ResourceList{}
	for k, v := range hard {
		list[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       corev1.ResourceQuotaSpec{Hard: list},
	}
}
