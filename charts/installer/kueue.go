package installer

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"github.com/gpuvc/gpuvc/api/contract"
)

// KueueMode is what `gpuvc install` does about Kueue, which Teams with
// spec.queueing need (docs/queueing.md). gpuvc never installs Kueue on a real
// cluster: Kueue is the cluster's, installed and upgraded on its own schedule.
type KueueMode string

const (
	// KueueDetect looks for Kueue and reports what it found; a missing Kueue is
	// a note, not an error (the default).
	KueueDetect KueueMode = "detect"
	// KueueRequire refuses to install, before changing anything, when the
	// cluster does not serve the Kueue API gpuvc writes.
	KueueRequire KueueMode = "require"
	// KueueOff does not look.
	KueueOff KueueMode = "off"
)

// KueueModes lists the modes, for flag help and errors.
var KueueModes = []KueueMode{KueueDetect, KueueRequire, KueueOff}

// ParseKueueMode checks a --kueue value.
func ParseKueueMode(s string) (KueueMode, error) {
	m := KueueMode(s)
	if !slices.Contains(KueueModes, m) {
		return "", fmt.Errorf("--kueue %q: must be one of detect, require, off (detect reports whether Kueue is there, require refuses to install without it, off does not look)", s)
	}
	return m, nil
}

// kueueKinds are the resources of Kueue's API gpuvc uses: the three it writes
// and the Workloads it reads.
var kueueKinds = []string{"resourceflavors", "clusterqueues", "localqueues", "workloads"}

// KueueReport is what the cluster serves of Kueue.
type KueueReport struct {
	Mode KueueMode `json:"mode"`
	// Versions are the kueue.x-k8s.io versions the cluster serves, e.g.
	// [v1beta1 v1beta2] for Kueue v0.15 to v0.17.
	Versions []string `json:"versions,omitempty"`
	// Usable: the cluster serves every kind gpuvc uses at KueueAPIVersion.
	Usable bool `json:"usable"`
	// Message says what was found, or what is missing and how to fix it.
	Message string `json:"message"`
}

// DetectKueue reports whether the cluster serves the Kueue API gpuvc writes
// (contract.KueueAPIVersion with every kind in kueueKinds). Only discovery
// errors other than "not found" are returned.
func DetectKueue(d discovery.DiscoveryInterface) (*KueueReport, error) {
	r := &KueueReport{Mode: KueueDetect}
	groups, err := d.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's API groups to find Kueue: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != contract.KueueGroup {
			continue
		}
		for _, v := range g.Versions {
			r.Versions = append(r.Versions, v.Version)
		}
	}
	want := contract.KueueGroup + "/" + contract.KueueAPIVersion
	fix := fmt.Sprintf("install Kueue %s or later (gpuvc is tested with %s; https://kueue.sigs.k8s.io/docs/installation/), then restart the gpuvc manager",
		contract.KueueMinVersion, contract.KueueTestedVersion)
	if !slices.Contains(r.Versions, contract.KueueAPIVersion) {
		if len(r.Versions) == 0 {
			r.Message = fmt.Sprintf("Kueue is not installed (no %s API): Teams with spec.queueing will not become ready; %s", contract.KueueGroup, fix)
		} else {
			r.Message = fmt.Sprintf("Kueue serves only %s/%s, too old for gpuvc, which writes %s: %s",
				contract.KueueGroup, strings.Join(r.Versions, ", "), want, fix)
		}
		return r, nil
	}
	res, err := d.ServerResourcesForGroupVersion(want)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing the kinds of %s: %w", want, err)
	}
	var missing []string
	for _, k := range kueueKinds {
		if res == nil || !slices.ContainsFunc(res.APIResources, func(a metav1.APIResource) bool { return a.Name == k }) {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		r.Message = fmt.Sprintf("Kueue's %s API lacks %s: %s", want, strings.Join(missing, ", "), fix)
		return r, nil
	}
	r.Usable = true
	r.Message = fmt.Sprintf("Kueue found: %s served (versions %s); Teams may set spec.queueing", want, strings.Join(r.Versions, ", "))
	return r, nil
}

// checkKueue runs the mode's check: nil for KueueOff, an error for KueueRequire
// without a usable Kueue (before anything is changed).
func (in *Installer) checkKueue(mode KueueMode) (*KueueReport, error) {
	if mode == "" {
		mode = KueueDetect
	}
	if mode == KueueOff {
		return nil, nil
	}
	r, err := DetectKueue(in.kube.Discovery())
	if err != nil {
		return nil, err
	}
	r.Mode = mode
	if mode == KueueRequire && !r.Usable {
		return nil, fmt.Errorf("--kueue=require: %s; or install without it (--kueue=detect) and leave spec.queueing unset", r.Message)
	}
	return r, nil
}
