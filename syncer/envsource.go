package syncer

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// GPU device variables from a ConfigMap or Secret. checkGPUEnv judges env by
// the variable's name, whatever its value comes from (value, configMapKeyRef,
// secretKeyRef, fieldRef): the name is in the pod. envFrom takes every key of a
// ConfigMap or Secret as a variable (with an optional prefix), so the names are
// in the object, not in the pod: the handler reads the objects the pod's
// envFrom names at admission, and checkGPUEnvFrom refuses one that would set a
// device variable. This holds only for what exists at admission — content can
// change afterwards and an optional reference can be created later — which is
// why the node side fences nodes whose runtime honours the variable at all
// (docs/syncer.md, "GPU device variables").

// EnvSources reads the keys of a ConfigMap or Secret in a namespace.
type EnvSources interface {
	// EnvKeys returns the data keys of the ConfigMap (kind "configMap") or
	// Secret (kind "secret"); nil when it does not exist.
	EnvKeys(ctx context.Context, namespace, kind, name string) ([]string, error)
}

// ClientEnvSources reads ConfigMaps and Secrets through a client. Use an
// uncached reader (the manager's cache holds only gpuvc's own Secrets).
type ClientEnvSources struct{ Reader client.Reader }

// EnvKeys implements EnvSources.
func (s ClientEnvSources) EnvKeys(ctx context.Context, namespace, kind, name string) ([]string, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	var keys []string
	switch kind {
	case envKindConfigMap:
		var cm corev1.ConfigMap
		if err := s.Reader.Get(ctx, key, &cm); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		for k := range cm.Data {
			keys = append(keys, k)
		}
		for k := range cm.BinaryData {
			keys = append(keys, k)
		}
	case envKindSecret:
		var sec corev1.Secret
		if err := s.Reader.Get(ctx, key, &sec); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		for k := range sec.Data {
			keys = append(keys, k)
		}
		for k := range sec.StringData {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

const (
	envKindConfigMap = "configMap"
	envKindSecret    = "secret"
)

// envSource is one envFrom reference: kind/name.
type envSource struct{ kind, name string }

func (s envSource) String() string { return s.kind + "/" + s.name }

// envFromSource returns the object an envFrom entry names; gpuvc's own share
// ConfigMaps are left out (ReservedConfigMap judges references to them, and a
// share pod's own legitimately carries NVIDIA_VISIBLE_DEVICES).
func envFromSource(e corev1.EnvFromSource) (envSource, bool) {
	switch {
	case e.ConfigMapRef != nil && !strings.HasPrefix(e.ConfigMapRef.Name, contract.ShareConfigMapPrefix):
		return envSource{envKindConfigMap, e.ConfigMapRef.Name}, true
	case e.SecretRef != nil:
		return envSource{envKindSecret, e.SecretRef.Name}, true
	}
	return envSource{}, false
}

// referencedEnvSources lists the ConfigMaps and Secrets the pod's containers
// take whole (envFrom).
func referencedEnvSources(pod *corev1.Pod) []envSource {
	var out []envSource
	for _, c := range allContainers(pod) {
		for _, e := range c.envFrom {
			if s, ok := envFromSource(e); ok && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// resolveEnvSources reads the keys of the objects the decisions will judge:
// on CREATE every envFrom, on UPDATE those of added (ephemeral) containers.
func (w *Webhook) resolveEnvSources(ctx context.Context, in *Input) (map[string][]string, error) {
	if w.opts.EnvSources == nil {
		return nil, nil
	}
	sources := referencedEnvSources(in.Pod)
	if in.Old != nil {
		old := referencedEnvSources(in.Old)
		sources = slices.DeleteFunc(sources, func(s envSource) bool { return slices.Contains(old, s) })
	}
	out := make(map[string][]string, len(sources))
	for _, s := range sources {
		keys, err := w.opts.EnvSources.EnvKeys(ctx, in.Pod.Namespace, s.kind, s.name)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s, err)
		}
		out[s.String()] = keys
	}
	return out, nil
}

// checkGPUEnvFrom refuses an envFrom whose ConfigMap or Secret, as it is at
// admission, would set an NVIDIA device variable (its key with the entry's
// prefix). Objects the handler did not read (missing, or an UPDATE's
// unchanged containers) are not judged.
func checkGPUEnvFrom(in *Input) (string, string, bool) {
	for _, c := range allContainers(in.Pod) {
		for i, e := range c.envFrom {
			s, ok := envFromSource(e)
			if !ok {
				continue
			}
			for _, k := range in.EnvSourceKeys[s.String()] {
				if name := e.Prefix + k; slices.Contains(gpuDeviceEnv, name) {
					field := fmt.Sprintf("%s.envFrom[%d].configMapRef.name", c.path, i)
					if s.kind == envKindSecret {
						field = fmt.Sprintf("%s.envFrom[%d].secretRef.name", c.path, i)
					}
					return ReasonGPUEnvFrom, fmt.Sprintf(
						"%s=%s holds key %q, which sets %s in the container (limit: GPUs come only from requests; no %s from any source): "+
							"the NVIDIA runtime would expose GPUs the pod was not given; remove the key from the %s or the envFrom, and request nvidia.com/gpu, a MIG profile or a gpu-fraction annotation",
						field, s.name, k, name, strings.Join(gpuDeviceEnv, ", "), s.kind), true
				}
			}
		}
	}
	return "", "", false
}
