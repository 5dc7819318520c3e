package celpolicy

import (
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Small helpers that write CEL. The policy is CEL source text; these keep the
// repeated parts (every container list, quoting) in one place.

// lit quotes s as a CEL string literal (CEL accepts Go's escapes).
func lit(s string) string { return strconv.Quote(s) }

// litList writes a CEL list of string literals.
func litList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = lit(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// containerGroup is one list of containers and when a check looks at its
// elements (bound to c). On CREATE every container is judged; on UPDATE only
// ephemeral containers the request adds (everything else a check reads is
// immutable, and settings judged at creation are not judged again).
type containerGroup struct{ field, list, when string }

var containerGroups = []containerGroup{
	{"spec.containers", "object.spec.containers", "variables.create"},
	{"spec.initContainers", "object.spec.?initContainers.orValue([])", "variables.create"},
	{"spec.ephemeralContainers", "object.spec.?ephemeralContainers.orValue([])", "!(c.name in variables.oldEphemeralNames)"},
}

// pathPlaceholder in a description is replaced by the container's field path,
// e.g. spec.initContainers[0].
const pathPlaceholder = "PATH"

// anyContainer is true when pred (over c) holds for a container a check looks at.
func anyContainer(pred string) string {
	parts := make([]string, len(containerGroups))
	for i, g := range containerGroups {
		parts[i] = g.list + ".exists(c, " + g.when + " && (" + pred + "))"
	}
	return "(" + strings.Join(parts, " || ") + ")"
}

// containerFindings is the list of describe (a CEL string over c, with PATH for
// the container's field path) for every container a check looks at where pred
// holds.
func containerFindings(pred, describe string) string {
	parts := make([]string, len(containerGroups))
	for i, g := range containerGroups {
		path := "(" + lit(g.field+"[") + " + string(i) + \"]\")"
		parts[i] = g.list + ".transformList(i, c, " + g.when + " && (" + pred + "), " +
			strings.ReplaceAll(describe, pathPlaceholder, path) + ")"
	}
	return "(" + strings.Join(parts, " + ") + ")"
}

// gpuDevices is what container c holds of resource n: its limit, else its
// request (extended resources need both equal when both are set).
func gpuDevices(c, n string) string {
	return "quantity(" + c + ".?resources.?limits[?" + n + "].orValue(" + c + ".?resources.?requests[?" + n + "].orValue(\"0\"))).asInteger()"
}

// sidecar is true for a restartable init container (runs beside the regular
// containers).
func sidecar(c string) string { return c + `.?restartPolicy.orValue("") == "Always"` }

// Frequently used literals.
var (
	labelPool      = lit(contract.LabelPool)
	gpuEnvNames    = litList(contract.DeviceEnv())
	shareCMPrefix  = lit(contract.ShareConfigMapPrefix)
	annoFraction   = lit(contract.AnnotationKAIFraction)
	annoMemory     = lit(contract.AnnotationKAIMemory)
	annoDevices    = lit(contract.AnnotationKAIFractionDevices)
	resourceGPU    = lit(contract.ResourceGPU)
	resourceMIG    = lit(contract.ResourceMIGPrefix)
	resourceNVIDIA = lit(contract.NVIDIAPrefix)
)

// paramString is the value of a parameter, "" when the ConfigMap lacks it.
func paramString(key string) string { return `params.?data[?` + lit(key) + `].orValue("")` }

// paramSet is true when the ConfigMap has the parameter.
func paramSet(key string) string { return `params.?data[?` + lit(key) + `].hasValue()` }

// paramList is a comma-separated parameter as a list (empty names dropped).
func paramList(key string) string { return paramString(key) + `.split(",").filter(s, s != "")` }

// listOrNone writes a list variable for a message: "a,b", or "(none)".
func listOrNone(v string) string { return `(size(` + v + `) == 0 ? "(none)" : ` + v + `.join(","))` }

// quoted writes `"` + expr + `"` for a message.
func quoted(expr string) string { return `"\"" + ` + expr + ` + "\""` }
