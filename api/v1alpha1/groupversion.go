// Package v1alpha1 is the Team API: one Team per tenant team, cluster-scoped, from
// which the manager provisions the team's host namespace, fences and vCluster.
// +kubebuilder:object:generate=true
// +groupName=gpuvc.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of Team.
var GroupVersion = schema.GroupVersion{Group: "gpuvc.dev", Version: "v1alpha1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Team{}, &TeamList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
	// AddToScheme adds the Team types to a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)
