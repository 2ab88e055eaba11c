package tools_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
)

type tabEntry struct {
	ID     int    `json:"tabId"`
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// listTabs asks the extension for its tabs through a pinned client, keyed by
// the decimal tab id the backend reports.
func listTabs(t *testing.T, h *hubStack) map[string]tabEntry {
	t.Helper()
	inv := h.invocation("tab-lister")
	inv.Mode = browserbackend.Mode("extension")
	c := h.rt.Selector.Client(inv)
	defer c.Close()
	raw, err := c.Send(stepCtx(t), browserbackend.Command{Method: "Vellum.listTabs", Params: json.RawMessage(`{}`)})
	require.NoError(t, err)
	var out struct{ Tabs []tabEntry }
	require.NoError(t, json.Unmarshal(raw, &out))
	m := map[string]tabEntry{}
	for _, tb := range out.Tabs {
		m[strconv.Itoa(tb.ID)] = tb
	}
	return m
}

func TestExtensionTabIsPinnedPerConversation(t *testing.T) {
	s := startSite(t)
	h := startRuntime(t)
	startExtension(t, h)
	tl := h.tools(t)
	ctx := stepCtx(t)
	convA, convB := h.invocation("conv-a"), h.invocation("conv-b")

	// Before any tool opened a tab, the active tab is the user's.
	var active string
	for id, tb := range listTabs(t, h) {
		if tb.Active {
			active = id
		}
	}
	require.NotEmpty(t, active)
	convC := h.invocation("conv-c")
	att, err := tl.Attach(ctx, convC, tools.AttachInput{UseActiveTab: true})
	require.NoError(t, err)
	assert.Equal(t, active, att.TabID, "use_active_tab pins the active tab")

	a1, err := tl.Navigate(ctx, convA, tools.NavigateInput{URL: s.url("/item/1")})
	require.NoError(t, err)
	require.Equal(t, browserbackend.KindExtension, a1.Backend)
	require.NotEmpty(t, a1.TabID, "the first navigate opens a tab of the conversation's own")
	assert.NotEqual(t, active, a1.TabID)

	a2, err := tl.Navigate(ctx, convA, tools.NavigateInput{URL: s.url("/item/2")})
	require.NoError(t, err)
	assert.Equal(t, a1.TabID, a2.TabID, "later calls reuse the conversation's tab")
	ex, err := tl.Read().Extract(ctx, convA, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Equal(t, a1.TabID, ex.TabID)
	assert.Equal(t, "/item/2", ex.Text, "non-navigate calls run in the pinned tab")

	b1, err := tl.Navigate(ctx, convB, tools.NavigateInput{URL: s.url("/item/3")})
	require.NoError(t, err)
	assert.NotEqual(t, a1.TabID, b1.TabID, "another conversation gets its own tab")
	ex, err = tl.Read().Extract(ctx, convA, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Equal(t, "/item/2", ex.Text, "conversation A's page is untouched")

	a3, err := tl.Navigate(ctx, convA, tools.NavigateInput{URL: s.url("/item/4"), NewTab: true})
	require.NoError(t, err)
	assert.NotEqual(t, a1.TabID, a3.TabID, "new_tab opens another tab")
	ex, err = tl.Read().Extract(ctx, convA, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Equal(t, a3.TabID, ex.TabID, "and makes it the conversation's tab")
	tabs := listTabs(t, h)
	assert.Contains(t, tabs, a1.TabID, "the previous tab stays open, still the conversation's")

	// Any tool opens the conversation's tab on its first call, as on every
	// backend.
	sn, err := tl.Read().Snapshot(ctx, h.invocation("conv-d"), tools.SnapshotInput{})
	require.NoError(t, err)
	assert.NotEmpty(t, sn.TabID)

	// The user closes conversation B's tab: its next call opens a new tab.
	closer := h.rt.Selector.Client(func() browserbackend.Invocation {
		i := h.invocation("closer")
		i.Mode = browserbackend.Mode("extension")
		return i
	}())
	_, err = closer.Send(ctx, browserbackend.Command{Method: "Vellum.closeTab", Params: json.RawMessage(`{"tabId":` + b1.TabID + `}`)})
	closer.Close()
	require.NoError(t, err)
	b2, err := tl.Navigate(ctx, convB, tools.NavigateInput{URL: s.url("/item/5")})
	require.NoError(t, err)
	assert.NotEqual(t, b1.TabID, b2.TabID, "a closed pinned tab is replaced")

	// Close closes the tab the conversation opened; Detach leaves it open.
	cl, err := tl.Close(ctx, convA, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: browserbackend.KindExtension, Tab: browserbackend.Tab{ID: a3.TabID, Owned: true}, Closed: true},
		{Kind: browserbackend.KindExtension, Tab: browserbackend.Tab{ID: a1.TabID, Owned: true}, Closed: true}}, cl.Tabs, "every tab it opened")
	assert.Equal(t, browserbackend.KindExtension, cl.Forgot)
	de, err := tl.Detach(ctx, convB, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: browserbackend.KindExtension, Tab: browserbackend.Tab{ID: b2.TabID, Owned: true}}}, de.Tabs)
	dc, err := tl.Close(ctx, convC, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Released{{Kind: browserbackend.KindExtension, Tab: browserbackend.Tab{ID: active}}}, dc.Tabs,
		"the user's active tab is only detached")
	tabs = listTabs(t, h)
	assert.NotContains(t, tabs, a3.TabID, "closed")
	assert.NotContains(t, tabs, a1.TabID, "closed")
	assert.Contains(t, tabs, b2.TabID, "detached, still open")
	assert.Contains(t, tabs, active, "the user's tab stays open")
	again, err := tl.Close(ctx, convA, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Empty(t, again.Tabs, "nothing left to release")
	_, ok := h.rt.Selector.Memo().Get("conv-a")
	assert.False(t, ok, "close forgets the conversation's backend")
}
