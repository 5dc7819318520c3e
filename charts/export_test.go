package charts

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// For the external tests (package charts_test), which may import packages that
// import this one.

// ValueSets are the configurations the tests render.
var ValueSets = valueSets

// ManagerArgs renders the chart with values and returns the manager container's args.
func ManagerArgs(t *testing.T, values string) []string {
	t.Helper()
	d := get[appsv1.Deployment](t, mustRender(t, values), "Deployment", "gpuvc-manager")
	return d.Spec.Template.Spec.Containers[0].Args
}
