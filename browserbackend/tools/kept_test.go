package tools_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// countingProvider counts the backends its provider builds.
type countingProvider struct {
	browserbackend.Provider
	builds atomic.Int32
}

func (p *countingProvider) Propose(inv browserbackend.Invocation, env browserbackend.Env) (browserbackend.Candidate, error) {
	c, err := p.Provider.Propose(inv, env)
	if err == nil && c.Build != nil {
		build := c.Build
		c.Build = func(ctx context.Context) (browserbackend.ScopedClient, error) {
			p.builds.Add(1)
			return build(ctx)
		}
	}
	return c, err
}

// With KeepClients a conversation's calls on cdp-inspect share one backend
// (one discovery, WebSocket and target attachment for the whole run) and
// act in the same tab; when the user closes that tab the call fails and the
// next one builds afresh in a new tab; Close drops the kept Client, and so
// does Shutdown.
func TestKeepClientsReusesOneBackendPerConversation(t *testing.T) {
	site := startOwnerSite(t)
	b := chromiumtest.Start(t)
	raw := dialRaw(t, b)
	insp := cdpInspectProvider(t, b)
	prov := &countingProvider{Provider: insp}
	tl := toolsOver(t, prov, tools.Options{KeepClients: true})
	inv := browserbackend.Invocation{ConversationID: "conv-keep", InterfaceID: "cli"}
	ctx := stepCtx(t)

	_, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: site + "/form?owner=K"})
	require.NoError(t, err)
	_, err = tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{})
	require.NoError(t, err)
	_, err = tl.Act().Click(ctx, inv, tools.ElementInput{Target: tools.Target{Selector: "#press"}})
	require.NoError(t, err)
	ex, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "#out"}})
	require.NoError(t, err)
	assert.Equal(t, "pressed by K", ex.Text, "the calls acted in one page")
	assert.EqualValues(t, 1, prov.builds.Load(), "four calls, one backend")

	// The user closes the conversation's tab: the kept Client is broken.
	var tab string
	for _, p := range raw.pages() {
		if p.URL == site+"/form?owner=K" {
			tab = p.TargetID
		}
	}
	require.NotEmpty(t, tab)
	raw.call("Target.closeTarget", map[string]any{"targetId": tab}, "")
	raw.waitDestroyed(tab)
	_, err = tl.Read().Extract(ctx, inv, tools.ExtractInput{})
	require.Error(t, err, "the tab is gone")
	for range 2 { // the provider reports the closed tab once, then opens a new one
		if _, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: site + "/form?owner=L"}); err == nil {
			break
		}
	}
	require.NoError(t, err)
	builds := prov.builds.Load()
	assert.Greater(t, builds, int32(1), "the broken Client was dropped")
	_, err = tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{})
	require.NoError(t, err)
	assert.Equal(t, builds, prov.builds.Load(), "and the new one is kept")

	_, err = tl.Close(ctx, inv, tools.ReleaseInput{})
	require.NoError(t, err)
	_, err = tl.Navigate(ctx, inv, tools.NavigateInput{URL: site + "/form?owner=M"})
	require.NoError(t, err)
	assert.Equal(t, builds+1, prov.builds.Load(), "Close dropped the kept Client")

	tl.Shutdown()
	_, err = tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{})
	require.NoError(t, err)
	assert.Equal(t, builds+2, prov.builds.Load(), "after Shutdown every call has its own Client")
}
