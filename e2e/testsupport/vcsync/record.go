package vcsync

import (
	"context"
	"fmt"

	testingutil "github.com/loft-sh/vcluster/pkg/util/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// record makes c append every write it receives to writes (a copy of the request
// taken before it is sent, and the answer). With forward set, writes go to
// forward instead of the fake client; a created object is then also put into the
// fake client, which vCluster reads back as its cache.
func record(c *testingutil.FakeIndexClient, forward client.Client, writes *[]Write) {
	do := func(verb, sub string, obj client.Object, patch client.Patch, send func() error) error {
		w := Write{Verb: verb, Subresource: sub, Object: obj.DeepCopyObject().(client.Object)}
		if patch != nil {
			w.PatchType = patch.Type()
			w.Patch, _ = patch.Data(obj)
		}
		w.Err = send()
		if w.Err == nil {
			w.Answer = obj.DeepCopyObject().(client.Object)
		}
		*writes = append(*writes, w)
		return w.Err
	}
	writer := func(fake client.Client) client.Client {
		if forward != nil {
			return forward
		}
		return fake
	}
	c.Client = interceptor.NewClient(c.Client.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, fake client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return do("create", "", obj, nil, func() error {
				if err := writer(fake).Create(ctx, obj, opts...); err != nil || forward == nil {
					return err
				}
				cached := obj.DeepCopyObject().(client.Object)
				cached.SetResourceVersion("")
				if err := fake.Create(ctx, cached); err != nil {
					return fmt.Errorf("vcsync: caching the created %s: %w", obj.GetName(), err)
				}
				return nil
			})
		},
		Update: func(ctx context.Context, fake client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return do("update", "", obj, nil, func() error { return writer(fake).Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, fake client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return do("patch", "", obj, patch, func() error { return writer(fake).Patch(ctx, obj, patch, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, fake client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return do("update", sub, obj, nil, func() error { return writer(fake).SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, fake client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return do("patch", sub, obj, patch, func() error { return writer(fake).SubResource(sub).Patch(ctx, obj, patch, opts...) })
		},
	})
}
