package browserbackend_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
)

// tabbed is a fake provider that declares caps and reports the tab its
// Build was asked for.
type tabbed struct {
	*bbt.Provider
	caps     bb.Caps
	released atomic.Int32
	err      error
}

func (p *tabbed) Describe() bb.Descriptor {
	d := p.Provider.Describe()
	d.Caps = p.caps
	return d
}

func (p *tabbed) Propose(inv bb.Invocation, env bb.Env) (bb.Candidate, error) {
	c, err := p.Provider.Propose(inv, env)
	if err != nil {
		return c, err
	}
	build := c.Build
	c.Build = func(ctx context.Context) (bb.ScopedClient, error) {
		sc, err := build(ctx)
		if err != nil {
			return nil, err
		}
		return tabScoped{sc, bb.Tab{ID: "t-" + inv.ConversationID, Owned: inv.Tab.Want != bb.TabActive}}, nil
	}
	return c, nil
}

func (p *tabbed) ReleaseConversation(_ context.Context, conv string, close bool) ([]bb.Released, error) {
	p.released.Add(1)
	return []bb.Released{{Kind: p.K, Tab: bb.Tab{ID: "t-" + conv, Owned: true}, Closed: close}}, p.err
}

type tabScoped struct {
	bb.ScopedClient
	tab bb.Tab
}

func (t tabScoped) Tab() bb.Tab { return t.tab }

func TestClientReportsTheTabAndCapsOfItsBackend(t *testing.T) {
	p := &tabbed{Provider: &bbt.Provider{K: "farm"}, caps: bb.CapTabs | bb.CapHoldTargets}
	sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{p}, Logger: bbt.DiscardLogger()})
	c := openClient(t, sel, bb.Invocation{ConversationID: "c", Tab: bb.TabRequest{Want: bb.TabActive}})
	_, ok := c.Tab()
	assert.False(t, ok, "no backend before the first command")
	assert.Zero(t, c.Caps())
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	tab, ok := c.Tab()
	require.True(t, ok)
	assert.Equal(t, bb.Tab{ID: "t-c"}, tab, "the tab the provider resolved for the request")
	assert.True(t, c.Caps().Has(bb.CapHoldTargets))
	assert.True(t, c.Caps().Has(bb.CapTabs|bb.CapHoldTargets))
	assert.False(t, bb.CapTabs.Has(bb.CapHoldTargets))
}

// A kind that does not declare CapTabs fails a call that asks for another
// tab with a typed policy error: the call never moves to another browser
// for it.
func TestAnotherTabOnAKindWithoutTabsIsNotSupportedNotFailover(t *testing.T) {
	bridge := &tabbed{Provider: &bbt.Provider{K: "bridge"}}
	local := &tabbed{Provider: &bbt.Provider{K: "local"}, caps: bb.CapTabs}
	sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{bridge, local}, Logger: bbt.DiscardLogger()})

	c := openClient(t, sel, bb.Invocation{ConversationID: "c", Tab: bb.TabRequest{Want: bb.TabNew}})
	_, err := c.Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, &bb.Error{Class: bb.ClassPolicy, Code: bb.CodeNotSupported})
	assert.Zero(t, local.Builds(), "no failover to another browser")

	c = openClient(t, sel, bb.Invocation{ConversationID: "c"})
	_, err = c.Send(context.Background(), evalCommand)
	require.NoError(t, err, "the current tab needs no capability")
	assert.Equal(t, bb.Kind("bridge"), c.Kind())
}

func TestReleaseConversationReachesEveryReleaserAndForgetsTheMemo(t *testing.T) {
	a := &tabbed{Provider: &bbt.Provider{K: "a"}, caps: bb.CapTabs}
	b := &tabbed{Provider: &bbt.Provider{K: "b"}, caps: bb.CapTabs, err: errors.New("b: release failed")}
	plain := &bbt.Provider{K: "plain"}
	sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{a, plain, b}, Logger: bbt.DiscardLogger()})
	c := openClient(t, sel, bb.Invocation{ConversationID: "c"})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	_, remembered := sel.Memo().Get("c")
	require.True(t, remembered)

	rel, err := sel.ReleaseConversation(context.Background(), "c", true)
	assert.ErrorContains(t, err, "b: release failed", "every provider's error is joined")
	assert.Equal(t, []bb.Released{
		{Kind: "a", Tab: bb.Tab{ID: "t-c", Owned: true}, Closed: true},
		{Kind: "b", Tab: bb.Tab{ID: "t-c", Owned: true}, Closed: true},
	}, rel, "in provider order")
	assert.EqualValues(t, 1, a.released.Load())
	assert.EqualValues(t, 1, b.released.Load())
	_, remembered = sel.Memo().Get("c")
	assert.False(t, remembered, "the conversation selects afresh")
}
