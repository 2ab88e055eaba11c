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

// listTabs asks the extension for its tabs through a pinned client.
func listTabs(t *testing.T, h *hubStack) map[int]tabEntry {
	t.Helper()
	inv := h.invocation("tab-lister")
	inv.Mode = browserbackend.Mode("extension")
	c := h.rt.Selector.Client(inv)
	defer c.Close()
	raw, err := c.Send(stepCtx(t), browserbackend.Command{Method: "Vellum.listTabs", Params: json.RawMessage(`{}`)})
	require.NoError(t, err)
	var out struct{ Tabs []tabEntry }
	require.NoError(t, json.Unmarshal(raw, &out))
	m := map[int]tabEntry{}
	for _, tb := range out.Tabs {
		m[tb.ID] = tb
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
	var active int
	for id, tb := range listTabs(t, h) {
		if tb.Active {
			active = id
		}
	}
	require.NotZero(t, active)
	convC := h.invocation("conv-c")
	att, err := tl.Attach(ctx, convC, tools.AttachInput{UseActiveTab: true})
	require.NoError(t, err)
	assert.Equal(t, active, att.TabID, "use_active_tab pins the active tab")

	a1, err := tl.Navigate(ctx, convA, tools.NavigateInput{URL: s.url("/item/1")})
	require.NoError(t, err)
	require.Equal(t, browserbackend.KindExtension, a1.Backend)
	require.NotZero(t, a1.TabID, "the first navigate opens a dedicated tab")

	a2, err := tl.Navigate(ctx, convA, tools.NavigateInput{URL: s.url("/item/2")})
	require.NoError(t, err)
	assert.Equal(t, a1.TabID, a2.TabID, "later calls reuse the conversation's tab")
	ex, err := tl.Extract(ctx, convA, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Equal(t, a1.TabID, ex.TabID)
	assert.Equal(t, "/item/2", ex.Text, "non-navigate calls run in the pinned tab")

	b1, err := tl.Navigate(ctx, convB, tools.NavigateInput{URL: s.url("/item/3")})
	require.NoError(t, err)
	assert.NotEqual(t, a1.TabID, b1.TabID, "another conversation gets its own tab")
	ex, err = tl.Extract(ctx, convA, tools.ExtractInput{})
	require.NoError(t, err)
	assert.Equal(t, "/item/2", ex.Text, "conversation A's page is untouched")

	a3, err := tl.Navigate(ctx, convA, tools.NavigateInput{URL: s.url("/item/4"), NewTab: true})
	require.NoError(t, err)
	assert.NotEqual(t, a1.TabID, a3.TabID, "new_tab opens another tab")
	pinned, _ := tl.PinnedTab(convA)
	assert.Equal(t, a3.TabID, pinned, "and pins it")
	tabs := listTabs(t, h)
	assert.Contains(t, tabs, a1.TabID, "the previous tab stays open")

	_, err = tl.Snapshot(ctx, h.invocation("conv-d"), tools.SnapshotInput{})
	assert.ErrorIs(t, err, tools.ErrNoTab, "without a pinned tab, only navigate/attach open one")

	// The user closes conversation B's tab: the next navigate opens a new one.
	closer := h.rt.Selector.Client(func() browserbackend.Invocation {
		i := h.invocation("closer")
		i.Mode = browserbackend.Mode("extension")
		return i
	}())
	_, err = closer.Send(ctx, browserbackend.Command{Method: "Vellum.closeTab", Params: json.RawMessage(`{"tabId":` + strconv.Itoa(b1.TabID) + `}`)})
	closer.Close()
	require.NoError(t, err)
	b2, err := tl.Navigate(ctx, convB, tools.NavigateInput{URL: s.url("/item/5")})
	require.NoError(t, err)
	assert.NotEqual(t, b1.TabID, b2.TabID, "a closed pinned tab is replaced")

	// Close closes the tab the tools opened; Detach leaves it open.
	cl, err := tl.Close(ctx, convA, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.True(t, cl.TabClosed)
	assert.Equal(t, a3.TabID, cl.TabID)
	assert.Equal(t, browserbackend.KindExtension, cl.Forgot)
	de, err := tl.Detach(ctx, convB, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.False(t, de.TabClosed)
	dc, err := tl.Close(ctx, convC, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.False(t, dc.TabClosed, "the user's active tab is only detached")
	tabs = listTabs(t, h)
	assert.NotContains(t, tabs, a3.TabID, "closed")
	assert.Contains(t, tabs, b2.TabID, "detached, still open")
	assert.Contains(t, tabs, active, "the user's tab stays open")
	_, ok := tl.PinnedTab(convA)
	assert.False(t, ok)
	_, ok = tl.PinnedTab(convB)
	assert.False(t, ok)
	_, ok = h.rt.Selector.Memo().Get("conv-a")
	assert.False(t, ok, "close forgets the conversation's backend")
}
