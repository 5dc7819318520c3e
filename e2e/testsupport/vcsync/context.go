package vcsync

import (
	"github.com/loft-sh/vcluster/pkg/config"
	"github.com/loft-sh/vcluster/pkg/mappings"
	"github.com/loft-sh/vcluster/pkg/mappings/resources"
	"github.com/loft-sh/vcluster/pkg/mappings/store"
	"github.com/loft-sh/vcluster/pkg/mappings/store/verify"
	"github.com/loft-sh/vcluster/pkg/syncer/synccontext"
	syncertesting "github.com/loft-sh/vcluster/pkg/syncer/testing"
	testingutil "github.com/loft-sh/vcluster/pkg/util/testing"
	"github.com/loft-sh/vcluster/pkg/util/translate"
)

// newRegisterContext is vCluster's fake register context (NewFakeRegisterContext)
// for vc's namespace. NewFakeRegisterContext binds its test namespace ("test")
// into the name mappers it registers, so they are registered again, into a fresh
// mappings store, once the translator for vc.HostNamespace is in place.
func newRegisterContext(vc VCluster, vConfig *config.VirtualClusterConfig, host, virtual *testingutil.FakeIndexClient) (*synccontext.RegisterContext, error) {
	ctx := syncertesting.NewFakeRegisterContext(vConfig, host, virtual)
	translate.Default = translate.NewSingleNamespaceTranslator(vc.HostNamespace)
	ctx.CurrentNamespace = vc.HostNamespace

	mappingsStore, err := store.NewStoreWithVerifyMapping(ctx, virtual, host, store.NewMemoryBackend(), verify.NewVerifyMapping(ctx.ToSyncContext("verify-mapping")))
	if err != nil {
		return nil, err
	}
	ctx.Mappings = mappings.NewMappingsRegistry(mappingsStore)
	if err := resources.RegisterMappings(ctx); err != nil {
		return nil, err
	}
	for _, m := range ctx.Mappings.List() {
		if err := m.Migrate(ctx, m); err != nil {
			return nil, err
		}
	}
	return ctx, nil
}
