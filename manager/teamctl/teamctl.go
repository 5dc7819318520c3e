// Package teamctl is what the `gpuvc team` commands do, as a library: create,
// apply (from Team manifests: ReadTeams), wait for, list, delete Teams and
// fetch a team's kubeconfig on a host cluster. The commands only parse flags
// and print.
package teamctl

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// FieldManager is the server-side apply manager of `gpuvc team apply`.
const FieldManager = "gpuvc-cli"

// Client talks to a host cluster on behalf of a platform engineer.
type Client struct {
	c    client.Client
	host string
	// Timing paces WaitReady and WaitDeleted; zero fields take DefaultTiming's.
	Timing Timing
}

// New returns a Client for a host cluster.
func New(cfg *rest.Config) (*Client, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	return &Client{c: c, host: cfg.Host}, nil
}

// ErrNotFound is returned (wrapped) when a Team does not exist.
var ErrNotFound = errors.New("not found")

// WriteOption changes how Create and Apply write.
type WriteOption func(*writeOptions)

type writeOptions struct{ dryRun bool }

// DryRun makes the API server check and default the Team (schema, CEL rules,
// admission) without storing it; the Team passed in receives what it would store.
func DryRun(o *writeOptions) { o.dryRun = true }

// Create creates a Team after checking it with the API's rules (v1alpha1.Validate),
// so bad input is refused before any request.
func (c *Client) Create(ctx context.Context, t *gpuvcv1.Team, opts ...WriteOption) error {
	o := writeOpts(opts)
	if errs := t.Validate(); len(errs) > 0 {
		return fmt.Errorf("team %s is invalid: %w", t.Name, errs.ToAggregate())
	}
	var co []client.CreateOption
	if o.dryRun {
		co = append(co, client.DryRunAll)
	}
	if err := c.c.Create(ctx, t, co...); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("team %s already exists: change it with `gpuvc team apply -f` or delete it first", t.Name)
		}
		return c.explain(err)
	}
	return nil
}

func writeOpts(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ApplyResult says what Apply did to one Team.
type ApplyResult string

const (
	Created    ApplyResult = "created"
	Configured ApplyResult = "configured"
	Unchanged  ApplyResult = "unchanged"
)

// Apply creates or updates a Team with server-side apply.
func (c *Client) Apply(ctx context.Context, t *gpuvcv1.Team, opts ...WriteOption) (ApplyResult, error) {
	o := writeOpts(opts)
	if errs := t.Validate(); len(errs) > 0 {
		return "", fmt.Errorf("team %s is invalid: %w", t.Name, errs.ToAggregate())
	}
	before := &gpuvcv1.Team{}
	err := c.c.Get(ctx, types.NamespacedName{Name: t.Name}, before)
	existed := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return "", c.explain(err)
	}
	t = t.DeepCopy()
	t.TypeMeta = metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"}
	t.ResourceVersion, t.ManagedFields, t.Status = "", nil, gpuvcv1.TeamStatus{}
	//nolint:staticcheck // typed objects with client.Apply: the Team type has no generated apply configuration
	po := []client.PatchOption{client.FieldOwner(FieldManager), client.ForceOwnership}
	if o.dryRun {
		po = append(po, client.DryRunAll)
	}
	if err := c.c.Patch(ctx, t, client.Apply, po...); err != nil {
		return "", c.explain(err)
	}
	switch {
	case !existed:
		return Created, nil
	case t.Generation != before.Generation:
		return Configured, nil
	default:
		return Unchanged, nil
	}
}

// Get returns a Team.
func (c *Client) Get(ctx context.Context, name string) (*gpuvcv1.Team, error) {
	t := &gpuvcv1.Team{}
	if err := c.c.Get(ctx, types.NamespacedName{Name: name}, t); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("team %s: %w", name, ErrNotFound)
		}
		return nil, c.explain(err)
	}
	return t, nil
}

// List returns every Team, sorted by name.
func (c *Client) List(ctx context.Context) (*gpuvcv1.TeamList, error) {
	l := &gpuvcv1.TeamList{}
	if err := c.c.List(ctx, l); err != nil {
		return nil, c.explain(err)
	}
	return l, nil
}

// Delete deletes a Team; a missing Team is not an error (reported by the bool).
func (c *Client) Delete(ctx context.Context, name string) (existed bool, err error) {
	t := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: name}}
	err = c.c.Delete(ctx, t)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, c.explain(err)
}

// Kubeconfig returns the team's kubeconfig from the Secret the manager exports,
// with its server replaced when server is set.
func (c *Client) Kubeconfig(ctx context.Context, name, server string) ([]byte, error) {
	t, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	if !apimeta.IsStatusConditionTrue(t.Status.Conditions, gpuvcv1.ConditionKubeconfigReady) {
		why := "the manager has not reported it yet"
		if k := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionKubeconfigReady); k != nil {
			why = k.Reason + ": " + k.Message
		}
		return nil, fmt.Errorf("team %s has no kubeconfig yet (%s); wait with `gpuvc team create --wait` or check `gpuvc team get %s`", name, why, name)
	}
	s := &corev1.Secret{}
	key := types.NamespacedName{Namespace: gpuvcv1.HostNamespace(name), Name: contract.KubeconfigSecretName}
	if err := c.c.Get(ctx, key, s); err != nil {
		return nil, fmt.Errorf("reading secret %s: %w", key, err)
	}
	data := s.Data[contract.KubeconfigSecretKey]
	if server == "" {
		return data, nil
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("secret %s holds no valid kubeconfig: %w", key, err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = server
	}
	return clientcmd.Write(*cfg)
}
