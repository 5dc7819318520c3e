package teamclaims

import (
	"crypto/sha256"

	"github.com/loft-sh/vcluster/pkg/util/base36"
)

// HostName is the name vCluster v0.36.1's pod translator gives the host object
// of the claim or claim template name in virtual namespace of vCluster release:
// its ResourceClaims and ResourceClaimTemplates mappers translate with
// translate.Default.HostNameShort, "v" and the first 13 base36 digits of
// SHA-256("<name>-x-<namespace>-x-<release>") (a test holds this equal to
// vCluster's own function).
func HostName(name, namespace, release string) string {
	digest := sha256.Sum256([]byte(name + "-x-" + namespace + "-x-" + release))
	return "v" + base36.EncodeBytes(digest[:])[:13]
}

// vCluster's own keys on the host objects it syncs (pkg/util/translate): the
// virtual object's name, namespace, UID and kind, and the host name. gpuvc's
// copies carry them too, so a reader of the host namespace (and vCluster's
// pod status translation) finds the virtual object as for vCluster's copies.
const (
	annotationName          = "vcluster.loft.sh/object-name"
	annotationNamespace     = "vcluster.loft.sh/object-namespace"
	annotationUID           = "vcluster.loft.sh/object-uid"
	annotationKind          = "vcluster.loft.sh/object-kind"
	annotationHostName      = "vcluster.loft.sh/object-host-name"
	annotationHostNamespace = "vcluster.loft.sh/object-host-namespace"
)
