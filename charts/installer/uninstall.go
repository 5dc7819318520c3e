package installer

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// UninstallOptions are Uninstall's inputs.
type UninstallOptions struct {
	// Force uninstalls even while Teams exist (see TeamsExistError).
	Force bool
	// Wait waits until the release's objects are gone, their pods included
	// (foreground deletion), reporting progress; the deadline is ctx's.
	Wait     bool
	Progress func(elapsed time.Duration, remaining []string)
	// Timeout bounds Helm's own operations.
	Timeout time.Duration
}

// UninstallResult says what Uninstall did.
type UninstallResult struct {
	// Found is false when there was no release: nothing was done.
	Found     bool   `json:"found"`
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	Revision  int    `json:"revision,omitempty"`
	Deleted   int    `json:"deleted"`
	// Kept lists objects Helm kept for their resource policy, as Helm words it.
	Kept string `json:"kept,omitempty"`
	// CRDs stay: Helm never deletes a chart's crds/.
	CRDs []string `json:"crds"`
	// UnmanagedTeams are the Teams --force left without a manager.
	UnmanagedTeams []string `json:"unmanagedTeams,omitempty"`
}

// TeamsExistError refuses to uninstall while Teams exist: the manager is what
// deletes a team's vCluster, namespace and GPU reservations and then removes the
// Team's finalizer.
type TeamsExistError struct {
	Teams    []string // every Team
	Deleting []string // those already being deleted, waiting for the manager
}

func (e *TeamsExistError) Error() string {
	exist := fmt.Sprintf("%d Teams exist", len(e.Teams))
	if len(e.Teams) == 1 {
		exist = "a Team exists"
	}
	msg := fmt.Sprintf("refusing to uninstall gpuvc: %s (%s). The manager is what deletes a team's vCluster, "+
		"host namespace and GPU reservations when its Team is deleted, then removes the Team's finalizer %s; without it they keep "+
		"running unmanaged and the Teams cannot be deleted. Delete them first: `gpuvc team delete %s --wait`, or pass --force to uninstall anyway",
		exist, strings.Join(e.Teams, ", "), gpuvcv1.Finalizer, strings.Join(e.Teams, " "))
	if len(e.Deleting) > 0 {
		msg += fmt.Sprintf(" (already being deleted, waiting for the manager: %s)", strings.Join(e.Deleting, ", "))
	}
	return msg
}

// Uninstall removes the release; a missing release is not an error (Found false),
// like rm -f. It refuses while Teams exist unless opts.Force. CRDs stay.
func (in *Installer) Uninstall(ctx context.Context, opts UninstallOptions) (*UninstallResult, error) {
	res := &UninstallResult{Release: ReleaseName, Namespace: in.namespace, CRDs: crdNames()}
	if err := in.reach(); err != nil {
		return nil, err
	}
	last, err := in.lastRelease()
	if err != nil {
		return nil, err
	}
	if last == nil {
		return res, nil
	}
	if last.Info.Status != release.StatusUninstalled {
		teams, deleting, err := in.teams(ctx)
		if err != nil {
			return nil, err
		}
		if len(teams) > 0 && !opts.Force {
			return nil, &TeamsExistError{Teams: teams, Deleting: deleting}
		}
		res.UnmanagedTeams = teams
	}
	un := action.NewUninstall(in.cfg)
	un.Timeout = opts.Timeout
	if opts.Wait {
		un.DeletionPropagation = "foreground"
	}
	resp, err := un.Run(ReleaseName)
	if err != nil {
		return nil, fmt.Errorf("helm uninstall of %s in namespace %s: %w", ReleaseName, in.namespace, err)
	}
	if last.Info.Status == release.StatusUninstalled {
		return res, nil // only a kept history, now purged
	}
	res.Found, res.Revision, res.Kept = true, resp.Release.Version, resp.Info
	objs, err := in.cfg.KubeClient.Build(strings.NewReader(resp.Release.Manifest), false)
	if err != nil {
		return res, fmt.Errorf("reading the uninstalled release's objects: %w", err)
	}
	res.Deleted = len(objs)
	if !opts.Wait {
		return res, nil
	}
	start := time.Now()
	var remaining []string
	reported := -1
	err = wait.PollUntilContextCancel(ctx, in.Interval, true, func(context.Context) (bool, error) {
		remaining = remaining[:0]
		for _, o := range objs {
			err := o.Get()
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return false, err
			}
			remaining = append(remaining, o.Mapping.GroupVersionKind.Kind+" "+o.Name)
		}
		// Workloads first: they go last (their pods must go first) and say the most.
		sort.SliceStable(remaining, func(i, j int) bool { return workloadFirst(remaining[i]) && !workloadFirst(remaining[j]) })
		if len(remaining) != reported && opts.Progress != nil {
			opts.Progress(time.Since(start), remaining)
		}
		reported = len(remaining)
		return len(remaining) == 0, nil
	})
	if err != nil {
		return res, fmt.Errorf("gpuvc uninstalled, but after %s these objects are still being deleted: %s: %w",
			time.Since(start).Round(time.Second), strings.Join(remaining, ", "), err)
	}
	return res, nil
}

func workloadFirst(name string) bool {
	return strings.HasPrefix(name, "Deployment ") || strings.HasPrefix(name, "DaemonSet ")
}

// teams lists the Teams on the cluster; none when the CRD is not installed.
func (in *Installer) teams(ctx context.Context) (all, deleting []string, err error) {
	c, err := client.New(in.rest, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, err
	}
	list := &gpuvcv1.TeamList{}
	err = c.List(ctx, list)
	if apimeta.IsNoMatchError(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing Teams (uninstall refuses while any exist): %w", err)
	}
	for _, t := range list.Items {
		all = append(all, t.Name)
		if !t.DeletionTimestamp.IsZero() {
			deleting = append(deleting, t.Name)
		}
	}
	return all, deleting, nil
}
