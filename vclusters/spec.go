package vclusters

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Spec describes one team's virtual cluster on the host. The manager maps its Team to
// a Spec; nothing here knows the Team API.
type Spec struct {
	// Name is the Helm release and vCluster name. The control plane is the StatefulSet
	// <Name>, the exported kubeconfig the Secret vc-<Name>.
	Name string
	// Namespace is the host namespace of the release, its Helm history, the control
	// plane and every pod synced from the virtual cluster. It must exist.
	Namespace string
	// Pool is the node pool the team's workloads run on. Synced pods get the toleration
	// gpuvc.dev/pool=<Pool>:NoSchedule and the node selector gpuvc.dev/pool=<Pool>, and
	// the virtual cluster sees only that pool's nodes.
	Pool string
	// KubeconfigServer is the https URL at which the team reaches its virtual cluster's
	// API. It goes into the exported kubeconfig and its host into the serving
	// certificate's SANs.
	KubeconfigServer string
	// ContextName names the cluster, user and context of the returned kubeconfig (the
	// team's name). Empty: Name.
	ContextName string
	// ControlPlaneResources, when set, are exactly the control-plane container's
	// requests and limits: chart defaults for resources not listed are dropped. Nil
	// keeps the chart's defaults.
	ControlPlaneResources *corev1.ResourceRequirements
	// ControlPlanePool, when set, pins the control-plane pod to that node pool
	// (node selector and toleration of the pool's taint). Empty: anywhere the
	// scheduler allows, which excludes tainted GPU pools.
	ControlPlanePool string
	// Persistence of the control plane's datastore.
	Persistence Persistence
	// SyncRealNodes shows the virtual cluster the pool's real nodes (correct
	// capacity and labels) instead of vCluster's pseudo nodes. It costs isolation:
	// vCluster's chart then grants the team's control plane cluster-wide
	// get/list/watch on pods and nodes, so a compromised control plane could read
	// every other team's pod specs. Off by default.
	SyncRealNodes bool
	// MetricsProxy has the control plane proxy the host's Metrics API, so
	// `kubectl top pods` works through the team's kubeconfig (the team's pods
	// only; nodes too with SyncRealNodes). Only where the host runs
	// metrics-server: otherwise the API it registers in the virtual cluster is
	// never available and the team's namespaces cannot be deleted.
	MetricsProxy bool
	// RunAsNonRoot runs the control plane's containers as a non-root user with the
	// settings of the "restricted" Pod Security Standard, so it is admitted into a
	// namespace that enforces that level.
	RunAsNonRoot bool
	// DRA syncs the team's ResourceClaims and ResourceClaimTemplates to the host
	// namespace (where gpuvc's fences judge them) and shows the team the host's
	// DeviceClasses. vCluster's chart then adds a ClusterRole (read of
	// DeviceClasses), so the manager needs the right to create cluster RBAC.
	DRA bool
	// SetOwner makes vCluster set an owner reference from synced host objects to its
	// Service. False when KAI's pod-grouper must see pods without a foreign owner.
	SetOwner bool
	// Chart says where the vCluster chart comes from. Zero: the published chart
	// DefaultChartVersion from DefaultRepoURL.
	Chart ChartSource
	// ExtraValues are deep-merged over the values gpuvc computes; on conflict they
	// win. A nil leaf removes a chart default (Helm's rule for null values).
	ExtraValues map[string]any
}

// Persistence chooses where the control plane keeps its datastore (/data).
type Persistence struct {
	// Ephemeral keeps the datastore in an emptyDir: the virtual cluster's objects are
	// lost when the pod is recreated, and the chart runs the control plane as a
	// Deployment instead of a StatefulSet. For clusters without a storage provisioner
	// and for throwaway clusters. False: a StatefulSet with a PersistentVolumeClaim
	// per replica.
	Ephemeral bool
	// Size of the claim, e.g. "10Gi". Empty: the chart's default (5Gi). Size and
	// StorageClass are ignored when Ephemeral.
	Size string
	// StorageClass of the claim. Empty: the cluster's default class.
	StorageClass string
}

// contextName is the kubeconfig context, cluster and user name for the team.
func (s Spec) contextName() string {
	if s.ContextName != "" {
		return s.ContextName
	}
	return s.Name
}

// maxReleaseName is Helm's limit for release names; the chart derives longer names
// (vc-<name>, <name>-headless) from it.
const maxReleaseName = 53

// Validate reports every problem of the spec, naming the field.
func (s Spec) Validate() error {
	var errs []error
	add := func(field string, problems ...string) {
		for _, p := range problems {
			errs = append(errs, fmt.Errorf("%s: %s", field, p))
		}
	}
	if s.Name == "" {
		add("Name", "must be set")
	} else {
		add("Name", validation.IsDNS1035Label(s.Name)...)
		if len(s.Name) > maxReleaseName {
			add("Name", fmt.Sprintf("must be at most %d characters (Helm release name)", maxReleaseName))
		}
	}
	if s.Namespace == "" {
		add("Namespace", "must be set")
	} else {
		add("Namespace", validation.IsDNS1123Label(s.Namespace)...)
	}
	if s.Pool == "" {
		add("Pool", "must be set: synced pods would otherwise run on any node")
	} else {
		add("Pool", validation.IsValidLabelValue(s.Pool)...)
	}
	if s.ControlPlanePool != "" {
		add("ControlPlanePool", validation.IsValidLabelValue(s.ControlPlanePool)...)
	}
	if _, err := serverHost(s.KubeconfigServer); err != nil {
		add("KubeconfigServer", err.Error())
	}
	if err := s.Chart.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Chart: %w", err))
	}
	return errors.Join(errs...)
}

// serverHost returns the host (IP or DNS name, no port) of an API server URL.
func serverHost(server string) (string, error) {
	if server == "" {
		return "", errors.New("must be set: the exported kubeconfig would point at localhost")
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %v", server, err)
	}
	if u.Scheme != "https" {
		return "", fmt.Errorf("%q must be an https:// URL", server)
	}
	host := u.Hostname()
	if host == "" {
		return "", fmt.Errorf("%q has no host", server)
	}
	if u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("%q must not have a path", server)
	}
	if net.ParseIP(host) == nil {
		if problems := validation.IsDNS1123Subdomain(host); len(problems) > 0 {
			return "", fmt.Errorf("%q: host %s", server, strings.Join(problems, "; "))
		}
	}
	return host, nil
}
