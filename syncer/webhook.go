package syncer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Paths the webhook server serves.
const (
	MutatePath   = "/gpuvc/v1/mutate-pods"
	ValidatePath = "/gpuvc/v1/validate-pods"
)

// Options configure a Webhook. Only Policies is required.
type Options struct {
	Policies PolicySource
	// Nodes resolves the pool of nodes a pod names. Without it any spec.nodeName
	// is refused and node-name affinities count as outside the pool.
	Nodes NodePools
	// MIG maps MIG profiles of other GPU models; nil allows exact profiles only.
	MIG MIGMapper
	// Quotas reads a team namespace's ResourceQuota usage, to explain a queueing
	// team's pod beyond its queue depth; nil leaves that to the quota's own message.
	Quotas QuotaUsage
	// EnvSources reads the ConfigMaps and Secrets a pod's envFrom names, to
	// refuse one that sets an NVIDIA device variable; nil judges env names only.
	EnvSources EnvSources
	// Claims reads the ResourceClaims and ResourceClaimTemplates a spec.dra
	// team's pods name; nil: such pods are refused as naming none found.
	Claims ClaimSpecs
	// Devices reads a spec.dra team's whole GPUs and DRA devices from its
	// ResourceQuota, for the team's GPU ceiling; nil: no ceiling check.
	Devices DeviceUsage
	// Recorder emits events on host pods (vCluster syncs them to the virtual pod).
	Recorder events.EventRecorder
	// Metrics records per-team metrics; nil records none.
	Metrics *Metrics
	// TrustedUsers are the users of gpuvc's own components (e.g. the share
	// controller's service account): they may write gpuvc.dev/ metadata and
	// remove the share gate.
	TrustedUsers []string
	// KueueUsers are the users Kueue's controller runs as: the only ones that
	// may lift Kueue's admission gate from a team's pod. Nil means
	// []string{contract.KueueDefaultUser}.
	KueueUsers []string
	// StatefulSetControllers are the users the StatefulSet controller creates
	// pods as; nil means DefaultStatefulSetControllers.
	StatefulSetControllers []string
	// Log receives operator logs; the zero value discards them.
	Log logr.Logger
}

// Webhook is the syncer's pod admission webhook.
type Webhook struct {
	opts    Options
	decoder admission.Decoder
}

// New returns a Webhook.
func New(opts Options) (*Webhook, error) {
	if opts.Policies == nil {
		return nil, errors.New("syncer webhook: Options.Policies is required")
	}
	if opts.KueueUsers == nil {
		opts.KueueUsers = []string{contract.KueueDefaultUser}
	}
	if opts.StatefulSetControllers == nil {
		opts.StatefulSetControllers = DefaultStatefulSetControllers
	}
	return &Webhook{opts: opts, decoder: admission.NewDecoder(clientgoscheme.Scheme)}, nil
}

// Register serves the mutating and validating handlers on srv.
func (w *Webhook) Register(srv webhook.Server) {
	mutate, validate := w.HTTPHandlers()
	srv.Register(MutatePath, mutate)
	srv.Register(ValidatePath, validate)
	srv.Register(DRAPath, &admission.Webhook{Handler: w.DRAValidator()})
}

// HTTPHandlers are the mutating and validating handlers as the API server
// calls them: an AdmissionReview in, one out.
func (w *Webhook) HTTPHandlers() (mutate, validate http.Handler) {
	return newReviewHandler(w.Mutator()), newReviewHandler(w.Validator())
}

// Mutator returns the mutating handler.
func (w *Webhook) Mutator() admission.Handler { return mutator{w} }

// Validator returns the validating handler.
func (w *Webhook) Validator() admission.Handler { return validator{w} }

// input prepares the chain's input for a pod request. A non-nil response ends
// the request (not a team namespace, or an error).
func (w *Webhook) input(ctx context.Context, req admission.Request) (*Input, *admission.Response) {
	respond := func(r admission.Response) (*Input, *admission.Response) { return nil, &r }
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" {
		return respond(admission.Allowed("not a pod"))
	}
	policy, err := w.opts.Policies.TeamPolicy(ctx, req.Namespace)
	if errors.Is(err, ErrNotTeamNamespace) {
		return respond(admission.Allowed("not a team namespace"))
	}
	if err != nil {
		w.opts.Log.Error(err, "no team policy", "namespace", req.Namespace)
		return respond(admission.Denied(fmt.Sprintf("gpuvc: %s: %v; pods in this namespace are refused until the platform team fixes it", ReasonNoTeamPolicy, err)))
	}
	user := req.UserInfo.Username
	in := &Input{Policy: policy, Pod: &corev1.Pod{}, MIG: w.opts.MIG, Trusted: slices.Contains(w.opts.TrustedUsers, user),
		Kueue:          slices.Contains(w.opts.KueueUsers, user),
		VClusterSyncer: policy.VClusterName != "" && user == vclusterUser(req.Namespace, policy.VClusterName),
		ReserveWriter:  user == "system:serviceaccount:"+req.Namespace+":"+contract.ReserveServiceAccount}
	if d := podsFrom(ctx); d != nil {
		in.Pod, in.Old = d.pod, d.old // decoded with the review (reviewHandler)
	} else {
		if err := w.decoder.DecodeRaw(req.Object, in.Pod); err != nil {
			return respond(admission.Errored(400, err))
		}
		if req.Operation == admissionv1.Update {
			in.Old = &corev1.Pod{}
			if err := w.decoder.DecodeRaw(req.OldObject, in.Old); err != nil {
				return respond(admission.Errored(400, err))
			}
		}
	}
	if req.Operation == admissionv1.Update {
		in.Role = storedRole(in.Old)
	} else {
		in.Role = roleOf(in.Pod, policy, req.UserInfo.Username, w.opts.StatefulSetControllers)
	}
	if req.Operation == admissionv1.Create && policy.KueueQueue != "" && w.opts.Quotas != nil {
		if in.QuotaUsed, err = w.opts.Quotas.GPUsUsed(ctx, req.Namespace); err != nil {
			return respond(admission.Errored(500, fmt.Errorf("reading the namespace's quota usage: %w", err)))
		}
	}
	if in.NodePools, err = w.resolveNodes(ctx, in); err != nil {
		return respond(admission.Errored(500, fmt.Errorf("looking up nodes named by the pod: %w", err)))
	}
	if err = w.resolveClaims(ctx, req, in); err != nil {
		return respond(admission.Errored(500, fmt.Errorf("reading the claims the pod names: %w", err)))
	}
	if in.EnvSourceKeys, err = w.resolveEnvSources(ctx, in); err != nil {
		return respond(admission.Errored(500, fmt.Errorf("reading the ConfigMaps and Secrets the pod's envFrom names: %w", err)))
	}
	return in, nil
}

// vclusterUser is the identity of a team's vCluster syncer: the ServiceAccount
// vc-<release> the vCluster chart creates in the team's namespace.
func vclusterUser(namespace, release string) string {
	return "system:serviceaccount:" + namespace + ":vc-" + release
}

// resolveNodes looks up the pools of the nodes the decisions will judge: on
// UPDATE only names that changed (nodeName is immutable once set).
func (w *Webhook) resolveNodes(ctx context.Context, in *Input) (map[string]string, error) {
	if w.opts.Nodes == nil {
		return nil, nil
	}
	names := referencedNodes(in.Pod)
	if in.Old != nil {
		old := referencedNodes(in.Old)
		names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(old, n) })
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		pool, err := w.opts.Nodes.PoolOf(ctx, n)
		if err != nil {
			return nil, err
		}
		out[n] = pool
	}
	return out, nil
}

// emit records events on pod, unless the request is a dry run.
func (w *Webhook) emit(req admission.Request, pod *corev1.Pod, action string, notes []Note) {
	// A pod without a name (generateName, refused on CREATE) has nothing an
	// event could point to.
	if w.opts.Recorder == nil || (req.DryRun != nil && *req.DryRun) || pod.Name == "" {
		return
	}
	for _, n := range notes {
		if n.Type == "" {
			continue
		}
		w.opts.Recorder.Eventf(pod, nil, n.Type, n.Reason, action, "%s", n.Message)
	}
}

func denialNotes(r Result) []Note {
	notes := make([]Note, len(r.Denials))
	for i, d := range r.Denials {
		notes[i] = Note{Warning, d.Reason, d.Message}
	}
	return notes
}

func teamOf(in *Input) string {
	if in == nil {
		return ""
	}
	return in.Policy.Team
}
