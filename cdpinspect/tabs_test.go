package cdpinspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// build runs the provider's Build for one invocation of conversation; the
// backend is closed when the test ends.
func build(t *testing.T, ctx context.Context, p *cdpinspect.Provider, conversation string) (*cdpinspect.Backend, error) {
	t.Helper()
	return buildTab(t, ctx, p, conversation, bb.TabRequest{})
}

func buildTab(t *testing.T, ctx context.Context, p *cdpinspect.Provider, conversation string, req bb.TabRequest) (*cdpinspect.Backend, error) {
	t.Helper()
	c, err := p.Propose(bb.Invocation{ConversationID: conversation, InterfaceID: "cli", Tab: req}, bb.Env{Cooldowns: &bb.Cooldowns{}})
	require.NoError(t, err)
	sc, err := c.Build(ctx)
	if err != nil {
		return nil, err
	}
	be := sc.(*cdpinspect.Backend)
	t.Cleanup(func() { be.Close() })
	return be, nil
}

func mustBuild(t *testing.T, p *cdpinspect.Provider, conversation string) *cdpinspect.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	be, err := build(t, ctx, p, conversation)
	require.NoError(t, err, conversation)
	return be
}

func enabledProvider(port int, opts ...cdpinspect.Option) *cdpinspect.Provider {
	cfg := cfgFor(port)
	cfg.Enabled = true
	return cdpinspect.NewProvider(cfg, append([]cdpinspect.Option{cdpinspect.WithUserDataDirs()}, opts...)...)
}

// pageIDs returns the ids of the page targets of a real browser.
func pageIDs(t *testing.T, b *chromiumtest.Browser) map[string]bool {
	t.Helper()
	ids := make(map[string]bool)
	resp, err := http.Get(b.HTTPURL() + "/json/list")
	require.NoError(t, err)
	defer resp.Body.Close()
	var list []struct{ ID, Type string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	for _, tg := range list {
		if tg.Type == "page" {
			ids[tg.ID] = true
		}
	}
	return ids
}

// destroyedWatch reports Chromium's Target.targetDestroyed events of b on a
// connection of the test's own; wait blocks until id was destroyed.
type destroyedWatch struct {
	t    *testing.T
	ws   *websocket.Conn
	seen map[string]bool
}

func watchDestroyed(t *testing.T, b *chromiumtest.Browser) *destroyedWatch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, b.BrowserWSURL, nil)
	require.NoError(t, err)
	ws.SetReadLimit(1 << 24)
	t.Cleanup(func() { ws.CloseNow() })
	w := &destroyedWatch{t: t, ws: ws, seen: make(map[string]bool)}
	require.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"Target.setDiscoverTargets","params":{"discover":true}}`)))
	w.readUntil(ctx, func(id int) bool { return id == 1 })
	return w
}

func (w *destroyedWatch) readUntil(ctx context.Context, done func(replyID int) bool) {
	for {
		_, data, err := w.ws.Read(ctx)
		require.NoError(w.t, err)
		var f struct {
			ID     int    `json:"id"`
			Method string `json:"method"`
			Params struct {
				TargetID string `json:"targetId"`
			} `json:"params"`
		}
		require.NoError(w.t, json.Unmarshal(data, &f))
		if f.Method == "Target.targetDestroyed" {
			w.seen[f.Params.TargetID] = true
		}
		if done(f.ID) {
			return
		}
	}
}

func (w *destroyedWatch) wait(targetID string) {
	w.t.Helper()
	if w.seen[targetID] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w.readUntil(ctx, func(int) bool { return w.seen[targetID] })
}

func TestProviderConversationKeepsItsOwnTabAcrossInvocations(t *testing.T) {
	b := chromiumtest.Start(t)
	user := pageIDs(t, b)
	require.Len(t, user, 1, "setup: the user's tab")
	p := enabledProvider(b.Port)

	first := mustBuild(t, p, "conv-X")
	tab := first.TargetID()
	assert.NotContains(t, user, tab, "the conversation opened a tab of its own")
	assert.False(t, first.CreatedTarget(), "the tab outlives the invocation")
	require.NoError(t, first.Close())
	assert.Contains(t, pageIDs(t, b), tab, "Close of one invocation leaves the conversation's tab open")

	for range 3 {
		be := mustBuild(t, p, "conv-X")
		assert.Equal(t, tab, be.TargetID(), "every later invocation attaches to the same target")
		require.NoError(t, be.Close())
	}

	// Concurrent first calls of one conversation open one tab.
	var wg sync.WaitGroup
	got := make([]string, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			be, err := build(t, ctx, p, "conv-Y")
			if assert.NoError(t, err) {
				got[i] = be.TargetID()
			}
		}()
	}
	wg.Wait()
	for _, id := range got {
		assert.Equal(t, got[0], id)
	}
	assert.NotEqual(t, tab, got[0], "conversations do not share a tab")
	assert.Len(t, pageIDs(t, b), 3, "the user's tab and one per conversation")

	// An invocation without a conversation gets a tab of its own, closed
	// again by its Close.
	anon := mustBuild(t, p, "")
	assert.True(t, anon.CreatedTarget())
	assert.False(t, user[anon.TargetID()] || anon.TargetID() == tab || anon.TargetID() == got[0])
	require.NoError(t, anon.Close())
	assert.Len(t, pageIDs(t, b), 3)
}

func TestProviderAdoptsAUserTabOnlyWhenAsked(t *testing.T) {
	b := chromiumtest.Start(t)
	user := pageIDs(t, b)
	p := enabledProvider(b.Port)
	mine := mustBuild(t, p, "conv-mine")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adopted, err := buildTab(t, ctx, p, "conv-adopt", bb.TabRequest{Want: bb.TabActive})
	require.NoError(t, err)
	assert.Contains(t, user, adopted.TargetID(), "TabActive adopts the user's tab, never another conversation's")
	require.NoError(t, adopted.Close())
	again := mustBuild(t, p, "conv-adopt")
	assert.Equal(t, adopted.TargetID(), again.TargetID(), "the adopted tab is remembered")

	assert.Equal(t, bb.Tab{ID: adopted.TargetID()}, again.Tab(), "an adopted tab is not the conversation's own")

	rel, err := p.ReleaseConversation(context.Background(), "conv-adopt", true)
	require.NoError(t, err)
	assert.Equal(t, []bb.Released{{Kind: bb.KindCDPInspect, Tab: bb.Tab{ID: adopted.TargetID()}}}, rel)
	assert.Contains(t, pageIDs(t, b), adopted.TargetID(), "closing the conversation leaves the user's tab open")
	rel, err = p.ReleaseConversation(context.Background(), "conv-mine", true)
	require.NoError(t, err)
	assert.Equal(t, []bb.Released{{Kind: bb.KindCDPInspect, Tab: bb.Tab{ID: mine.TargetID(), Owned: true}, Closed: true}}, rel)
	assert.NotContains(t, pageIDs(t, b), mine.TargetID(), "the agent's own tab is closed")
	rel, err = p.ReleaseConversation(context.Background(), "conv-mine", true)
	assert.NoError(t, err, "nothing left to close")
	assert.Empty(t, rel)

	// TabNew adds a tab: the old one stays the conversation's.
	old := mustBuild(t, p, "conv-new").TargetID()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	fresh, err := buildTab(t, ctx2, p, "conv-new", bb.TabRequest{Want: bb.TabNew})
	require.NoError(t, err)
	assert.NotEqual(t, old, fresh.TargetID())
	assert.Equal(t, bb.Tab{ID: fresh.TargetID(), Owned: true}, fresh.Tab())
	assert.Contains(t, pageIDs(t, b), old, "the previous tab stays open")
	tabs, err := p.ConversationTabs(ctx2, "conv-new")
	require.NoError(t, err)
	require.Len(t, tabs, 2)
	assert.Equal(t, fresh.TargetID(), tabs[0].ID)
	assert.True(t, tabs[0].Current)
	assert.Equal(t, old, tabs[1].ID)

	// TabByID selects any of the conversation's tabs by the id it
	// reported, and refuses any other tab.
	byID, err := buildTab(t, ctx2, p, "conv-new", bb.TabRequest{Want: bb.TabByID, ID: old})
	require.NoError(t, err)
	assert.Equal(t, old, byID.TargetID())
	again = mustBuild(t, p, "conv-new")
	assert.Equal(t, old, again.TargetID(), "the selected tab is the current one")
	_, err = buildTab(t, ctx2, p, "conv-new", bb.TabRequest{Want: bb.TabByID, ID: adopted.TargetID()})
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.CodeTargetNotFound, e.Code)
	assert.Equal(t, bb.ClassPolicy, e.Class, "never failover material")

	// CloseTab closes one; the other becomes current.
	watch := watchDestroyed(t, b)
	r, err := p.CloseTab(ctx2, "conv-new", old)
	require.NoError(t, err)
	assert.True(t, r.Closed)
	watch.wait(old)
	assert.Equal(t, fresh.TargetID(), mustBuild(t, p, "conv-new").TargetID())
	_, err = p.CloseTab(ctx2, "conv-new", old)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.CodeTargetNotFound, e.Code)
}

func TestProviderAdoptsPopupsAndClosesThemWithTheConversation(t *testing.T) {
	b := chromiumtest.Start(t)
	p := enabledProvider(b.Port)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	be := mustBuild(t, p, "conv-pop")
	_, err := be.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"window.open('about:blank#popup'); 1","userGesture":true}`)})
	require.NoError(t, err)
	var tabs []bb.TabInfo
	for len(tabs) < 2 { // the popup's target appears asynchronously; Target.getTargets is asked again
		tabs, err = p.ConversationTabs(ctx, "conv-pop")
		require.NoError(t, err)
		require.NoError(t, ctx.Err())
	}
	require.Len(t, tabs, 2)
	popup := tabs[1]
	assert.Equal(t, be.TargetID(), popup.Opener, "adopted as a popup of the conversation's tab")
	assert.True(t, popup.Owned)

	watch := watchDestroyed(t, b)
	rel, err := p.ReleaseConversation(ctx, "conv-pop", true)
	require.NoError(t, err)
	assert.Len(t, rel, 2)
	watch.wait(popup.ID)
	watch.wait(be.TargetID())
	assert.NotContains(t, pageIDs(t, b), popup.ID, "the popup closed with the conversation")
}

func TestProviderClosedTabIsTargetNotFoundThenANewTab(t *testing.T) {
	b := chromiumtest.Start(t)
	p := enabledProvider(b.Port)
	be := mustBuild(t, p, "conv-X")
	closed := be.TargetID()
	require.NoError(t, be.Close())
	watch := watchDestroyed(t, b)
	resp, err := http.Get(b.HTTPURL() + "/json/close/" + closed)
	require.NoError(t, err)
	resp.Body.Close()
	watch.wait(closed)
	require.NotContains(t, pageIDs(t, b), closed, "setup: the user closed the conversation's tab")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stale, err := build(t, ctx, p, "conv-X")
	if err == nil {
		// The provider's shared connection had not heard the session's
		// detach yet (make stress caught this order), so the Build handed
		// out the conversation's old session: its first command finds the
		// tab gone and fails as the Build would have (Backend.sessionGone).
		_, err = stale.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
	}
	require.Error(t, err)
	var e *bb.Error
	require.True(t, errors.As(err, &e), "%T: %v", err, err)
	assert.Equal(t, bb.ClassProtocol, e.Class, "never failover material: %v", err)
	assert.Equal(t, bb.CodeTargetNotFound, e.Code)
	assert.Equal(t, bb.KindCDPInspect, e.Backend)
	assert.Contains(t, e.Error(), "the conversation's tab was closed")
	assert.Len(t, pageIDs(t, b), 1, "the failed invocation opened nothing and attached to nothing")

	next := mustBuild(t, p, "conv-X")
	assert.NotEqual(t, closed, next.TargetID(), "the next invocation opens a new tab")
	assert.True(t, pageIDs(t, b)[next.TargetID()])
}

func TestProviderForgetsTheTabsOfARestartedBrowser(t *testing.T) {
	b1 := chromiumtest.Start(t)
	b2 := chromiumtest.Start(t)
	dir := t.TempDir()
	announce := func(b *chromiumtest.Browser) { // as Chrome does on start
		require.NoError(t, os.WriteFile(filepath.Join(dir, "DevToolsActivePort"),
			[]byte(strconv.Itoa(b.Port)+"\n"+b.WSPath), 0o600))
	}
	announce(b1)
	cfg := cfgFor(closedPort(t)) // only the file finds the browser
	cfg.Enabled = true
	p := cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs(dir))
	old := mustBuild(t, p, "conv-X").TargetID()

	announce(b2) // "restarted": a new browser run at another address
	user := pageIDs(t, b2)
	be := mustBuild(t, p, "conv-X")
	assert.NotEqual(t, old, be.TargetID())
	assert.NotContains(t, user, be.TargetID(), "a tab of its own in the new browser, not the user's")
	assert.Len(t, pageIDs(t, b2), len(user)+1)
}

func TestProviderRemembersAtMostMaxConversations(t *testing.T) {
	b := chromiumtest.Start(t)
	watch := watchDestroyed(t, b)
	p := enabledProvider(b.Port, cdpinspect.WithMaxConversations(1))
	one := mustBuild(t, p, "conv-1").TargetID()
	assert.Equal(t, one, mustBuild(t, p, "conv-1").TargetID())
	two := mustBuild(t, p, "conv-2").TargetID()
	// conv-1 fell out of the bound: the agent's tab it opened is closed.
	watch.wait(one)
	assert.NotContains(t, pageIDs(t, b), one, "an evicted conversation's own tab is closed")
	again := mustBuild(t, p, "conv-1")
	assert.NotEqual(t, one, again.TargetID(), "conv-1 was forgotten (LRU) and gets a new tab")
	watch.wait(two)

	// A user tab adopted by an evicted conversation stays open.
	user := pageIDs(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adopted, err := buildTab(t, ctx, p, "conv-adopt", bb.TabRequest{Want: bb.TabActive})
	require.NoError(t, err)
	require.NotContains(t, []string{again.TargetID()}, adopted.TargetID())
	mustBuild(t, p, "conv-3")
	mustBuild(t, p, "conv-4") // conv-3's own tab evicted and closed, while the adopted one stayed
	assert.Contains(t, pageIDs(t, b), adopted.TargetID(), "the user's tab is never closed")
	for id := range user {
		if id != again.TargetID() {
			assert.Contains(t, pageIDs(t, b), id, "user tab %s stays open", id)
		}
	}
}

// TestProviderDetachLeavesTheTabAndTheNextCallOpensAnew: after
// ReleaseConversation without close (tools.Detach), the conversation's next
// Build opens a new tab, and the old one is still open.
func TestProviderDetachLeavesTheTabAndTheNextCallOpensAnew(t *testing.T) {
	b := chromiumtest.Start(t)
	p := enabledProvider(b.Port)
	first := mustBuild(t, p, "conv-D").TargetID()
	assert.Equal(t, first, mustBuild(t, p, "conv-D").TargetID())
	rel, err := p.ReleaseConversation(context.Background(), "conv-D", false)
	require.NoError(t, err)
	assert.Equal(t, []bb.Released{{Kind: bb.KindCDPInspect, Tab: bb.Tab{ID: first, Owned: true}}}, rel)
	next := mustBuild(t, p, "conv-D").TargetID()
	assert.NotEqual(t, first, next, "a forgotten conversation opens a tab anew")
	assert.Contains(t, pageIDs(t, b), first, "forgetting closes nothing")
	assert.Equal(t, next, mustBuild(t, p, "conv-D").TargetID())
}
