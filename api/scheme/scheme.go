// Package scheme builds the runtime.Scheme every gpuvc client and the manager use:
// Kubernetes' built-in types plus the Team API. It sits beside the API types and
// imports nothing else of gpuvc, so the CLI (manager/teamctl) links the types it
// talks about and not the manager that reconciles them.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// New returns a scheme that knows the built-in types and the Team API.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = gpuvcv1.AddToScheme(s)
	return s
}
