package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// rawCDP is a browser-level CDP connection of the test's own, standing for
// the user (opening and closing tabs) and for checks by target id.
type rawCDP struct {
	t         *testing.T
	ws        *websocket.Conn
	nextID    int
	destroyed map[string]bool     // Target.targetDestroyed seen (discovery is on)
	opened    map[string][]string // targets created or changed with an openerId, by opener (discovery)
	sessions  map[string]bool     // Target.attachedToTarget seen: session id → detached since
	loads     map[string]int      // Page.loadEventFired seen, by session id
}

func dialRaw(t *testing.T, b *chromiumtest.Browser) *rawCDP {
	t.Helper()
	ws, _, err := websocket.Dial(stepCtx(t), b.BrowserWSURL, nil)
	require.NoError(t, err)
	ws.SetReadLimit(1 << 24)
	t.Cleanup(func() { ws.CloseNow() })
	r := &rawCDP{t: t, ws: ws, destroyed: make(map[string]bool), opened: make(map[string][]string), sessions: make(map[string]bool), loads: make(map[string]int)}
	r.call("Target.setDiscoverTargets", map[string]any{"discover": true}, "")
	return r
}

// read reads one frame, noting destroyed targets.
func (r *rawCDP) read(ctx context.Context) (id int, result, cdpErr json.RawMessage) {
	r.t.Helper()
	_, data, err := r.ws.Read(ctx)
	require.NoError(r.t, err)
	var f struct {
		ID        int             `json:"id"`
		Method    string          `json:"method"`
		Params    json.RawMessage `json:"params"`
		Result    json.RawMessage `json:"result"`
		Error     json.RawMessage `json:"error"`
		SessionID string          `json:"sessionId"`
	}
	require.NoError(r.t, json.Unmarshal(data, &f))
	if f.Method == "Page.loadEventFired" {
		r.loads[f.SessionID]++
	}
	if f.Method == "Target.targetDestroyed" {
		var p struct {
			TargetID string `json:"targetId"`
		}
		require.NoError(r.t, json.Unmarshal(f.Params, &p))
		r.destroyed[p.TargetID] = true
	}
	if f.Method == "Target.attachedToTarget" || f.Method == "Target.detachedFromTarget" {
		var p struct {
			SessionID string `json:"sessionId"`
		}
		require.NoError(r.t, json.Unmarshal(f.Params, &p))
		r.sessions[p.SessionID] = f.Method == "Target.detachedFromTarget"
	}
	if f.Method == "Target.targetCreated" || f.Method == "Target.targetInfoChanged" {
		var p struct {
			TargetInfo pageTarget `json:"targetInfo"`
		}
		require.NoError(r.t, json.Unmarshal(f.Params, &p))
		if o := p.TargetInfo.OpenerID; o != "" && !slices.Contains(r.opened[o], p.TargetInfo.TargetID) {
			r.opened[o] = append(r.opened[o], p.TargetInfo.TargetID)
		}
	}
	return f.ID, f.Result, f.Error
}

// waitDestroyed reads until Chromium reports targetID destroyed.
func (r *rawCDP) waitDestroyed(targetID string) {
	r.t.Helper()
	ctx := stepCtx(r.t)
	for !r.destroyed[targetID] {
		r.read(ctx)
	}
}

// call sends method (on sessionID when set) and returns its result; a CDP
// error reply fails the test.
func (r *rawCDP) call(method string, params any, sessionID string) json.RawMessage {
	r.t.Helper()
	result, cdpErr := r.tryCall(method, params, sessionID)
	require.Empty(r.t, cdpErr, "%s", method)
	return result
}

// tryCall is call that returns a CDP error reply instead of failing.
func (r *rawCDP) tryCall(method string, params any, sessionID string) (result, cdpErr json.RawMessage) {
	r.t.Helper()
	ctx := stepCtx(r.t)
	r.nextID++
	id := r.nextID
	msg := map[string]any{"id": id, "method": method, "params": params}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	raw, _ := json.Marshal(msg)
	require.NoError(r.t, r.ws.Write(ctx, websocket.MessageText, raw))
	for {
		got, result, cdpErr := r.read(ctx)
		if got == id {
			return result, cdpErr
		}
	}
}

type pageTarget struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	URL      string `json:"url"`
	OpenerID string `json:"openerId"`
	Attached bool   `json:"attached"` // a DevTools client (any connection) has a session on it
}

// waitPopupsGone waits until every page opened by the page at openerURL is
// destroyed.
func (r *rawCDP) waitPopupsGone(openerURL string) {
	r.t.Helper()
	pages := r.pages()
	for _, opener := range pages {
		if opener.URL != openerURL {
			continue
		}
		for _, p := range pages {
			if p.OpenerID == opener.TargetID {
				r.waitDestroyed(p.TargetID)
			}
		}
	}
}

// waitOpened reads until the page of opener has opened its n-th window
// (counted from 1) and returns that window's target id.
func (r *rawCDP) waitOpened(opener string, n int) string {
	r.t.Helper()
	ctx := stepCtx(r.t)
	for len(r.opened[opener]) < n {
		r.read(ctx)
	}
	return r.opened[opener][n-1]
}

// evalGesture evaluates expr in the page of targetID as if the user had
// acted (Runtime.evaluate userGesture: a window.open is then no popup the
// browser blocks), on a session of the test's own.
func (r *rawCDP) evalGesture(targetID, expr string) {
	r.t.Helper()
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(r.t, json.Unmarshal(r.call("Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, ""), &att))
	defer r.call("Target.detachFromTarget", map[string]any{"sessionId": att.SessionID}, "")
	r.call("Runtime.evaluate", map[string]any{"expression": expr, "userGesture": true}, att.SessionID)
}

// titleOnceLoaded returns the title of the document at url in targetID
// once it has loaded, on a session of the test's own. A tab just created
// shows its initial about:blank (already complete) until the navigation
// to url commits, so the check runs again after every load event of the
// tab until it holds.
func (r *rawCDP) titleOnceLoaded(targetID, url string) string {
	r.t.Helper()
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(r.t, json.Unmarshal(r.call("Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, ""), &att))
	defer r.call("Target.detachFromTarget", map[string]any{"sessionId": att.SessionID}, "")
	r.call("Page.enable", map[string]any{}, att.SessionID)
	want, _ := json.Marshal(url)
	expr := `location.href === ` + string(want) + ` && document.readyState === "complete" ? document.title : null`
	ctx := stepCtx(r.t)
	for {
		seen := r.loads[att.SessionID]
		raw, cdpErr := r.tryCall("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, att.SessionID)
		var res struct {
			Result struct {
				Value *string `json:"value"`
			} `json:"result"`
		}
		// An error (the document being replaced as the command
		// arrived) is a check that did not hold yet.
		if len(cdpErr) == 0 && json.Unmarshal(raw, &res) == nil && res.Result.Value != nil {
			return *res.Result.Value
		}
		for r.loads[att.SessionID] == seen {
			r.read(ctx)
		}
	}
}

// pages lists the page targets in Target.getTargets order.
func (r *rawCDP) pages() []pageTarget {
	r.t.Helper()
	var list struct {
		TargetInfos []pageTarget `json:"targetInfos"`
	}
	require.NoError(r.t, json.Unmarshal(r.call("Target.getTargets", map[string]any{}, ""), &list))
	var out []pageTarget
	for _, tg := range list.TargetInfos {
		if tg.Type == "page" {
			out = append(out, tg)
		}
	}
	return out
}

// urls maps target id to URL.
func (r *rawCDP) urls() map[string]string {
	out := make(map[string]string)
	for _, p := range r.pages() {
		out[p.TargetID] = p.URL
	}
	return out
}

// eval evaluates expr in the page of targetID, on a session of the test's
// own, and returns the string value.
func (r *rawCDP) eval(targetID, expr string) string {
	r.t.Helper()
	return r.evaluate(targetID, expr, false)
}

func (r *rawCDP) evaluate(targetID, expr string, await bool) string {
	r.t.Helper()
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(r.t, json.Unmarshal(r.call("Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, ""), &att))
	defer r.call("Target.detachFromTarget", map[string]any{"sessionId": att.SessionID}, "")
	var res struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	params := map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": await}
	require.NoError(r.t, json.Unmarshal(r.call("Runtime.evaluate", params, att.SessionID), &res))
	return res.Result.Value
}

func startOwnerSite(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		owner := r.URL.Query().Get("owner")
		o := html.EscapeString(owner)
		page(w, "form of "+owner, `<p id="owner">owner `+o+`</p>`+
			`<button id="press" onclick="document.getElementById('out').textContent='pressed by `+o+`'">Press</button><p id="out"></p>`)
	})
	mux.HandleFunc("/user", func(w http.ResponseWriter, r *http.Request) {
		page(w, "user tab "+r.URL.Query().Get("n"), `<p>the user's own page</p>`)
	})
	return chromiumtest.LoopbackServer(t, mux).URL
}

// cdpInspectToolsWithClose is cdpInspectTools on browser b; Close and
// Detach reach the provider through Selector.ReleaseConversation.
func cdpInspectToolsWithClose(t *testing.T, b *chromiumtest.Browser) *tools.Tools {
	return toolsOver(t, cdpInspectProvider(t, b), tools.Options{})
}

// TestCDPInspectDetach_TheNextCallOpensANewTab: tools.Detach makes
// cdp-inspect forget the conversation's tab: the tab stays open, and the
// conversation's next call works in a new tab of its own.
func TestCDPInspectDetach_TheNextCallOpensANewTab(t *testing.T) {
	site := startOwnerSite(t)
	b := chromiumtest.Start(t)
	raw := dialRaw(t, b)
	tl := cdpInspectToolsWithClose(t, b)
	inv := browserbackend.Invocation{ConversationID: "conv-D", InterfaceID: "cli"}
	tabWith := func(u string) string {
		for id, got := range raw.urls() {
			if got == u {
				return id
			}
		}
		return ""
	}
	first := site + "/form?owner=D&n=1"
	_, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: first})
	require.NoError(t, err)
	old := tabWith(first)
	require.NotEmpty(t, old)

	_, err = tl.Detach(stepCtx(t), inv, tools.ReleaseInput{})
	require.NoError(t, err)
	second := site + "/form?owner=D&n=2"
	_, err = tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: second})
	require.NoError(t, err)
	fresh := tabWith(second)
	require.NotEmpty(t, fresh)
	assert.NotEqual(t, old, fresh, "after Detach the conversation works in a new tab")
	assert.Equal(t, first, raw.urls()[old], "the detached tab stays open, untouched")
	snap, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
	require.NoError(t, err)
	assert.Equal(t, second, snap.URL, "later calls stay in the new tab")
}

// TestCDPInspectThreeUserTabs_TwoConversationsStayInTheirOwnTabs: a browser
// with three user tabs; two conversations alternate ten navigate / snapshot
// / click calls over cdp-inspect while Chromium reorders Target.getTargets
// as their tabs navigate. Each call runs in its conversation's own tab
// (checked by target id and URL), the user's tabs are never navigated, a
// conversation whose tab the user closed gets target_not_found (and a new
// tab on the call after), use_active_tab adopts a user tab, and Close closes
// only the tabs the agent opened.
func TestCDPInspectThreeUserTabs_TwoConversationsStayInTheirOwnTabs(t *testing.T) {
	site := startOwnerSite(t)
	b := chromiumtest.Start(t, chromiumtest.WithStartURL(site+"/user?n=1"))
	raw := dialRaw(t, b)
	for _, n := range []string{"2", "3"} {
		raw.call("Target.createTarget", map[string]any{"url": site + "/user?n=" + n}, "")
	}
	userURLs := raw.urls()
	require.Len(t, userURLs, 3, "setup: three user tabs")
	for _, u := range userURLs {
		require.Contains(t, u, "/user?n=", "setup: the user tabs have loaded")
	}

	tl := cdpInspectToolsWithClose(t, b)
	convs := []browserbackend.Invocation{
		{ConversationID: "conv-A", InterfaceID: "cli"},
		{ConversationID: "conv-B", InterfaceID: "cli"},
	}
	tabOf, lastURL := alternateInOwnTabs(t, tl, raw, site, convs, userURLs, browserbackend.KindCDPInspect)

	t.Run("the user closed A's tab", func(t *testing.T) {
		closed := tabOf["A"]
		raw.call("Target.closeTarget", map[string]any{"targetId": closed}, "")
		raw.waitDestroyed(closed)
		_, err := tl.Read().Snapshot(stepCtx(t), convs[0], tools.SnapshotInput{})
		require.Error(t, err)
		var be *browserbackend.Error
		require.True(t, errors.As(err, &be), "a backend error: %v", err)
		assert.Equal(t, browserbackend.ClassProtocol, be.Class, "no failover material: %v", err)
		assert.Equal(t, browserbackend.CodeTargetNotFound, be.Code, "%v", err)
		assert.Equal(t, browserbackend.KindCDPInspect, be.Backend)
		assert.Contains(t, err.Error(), "the conversation's tab was closed")
		assert.Contains(t, err.Error(), closed)
		urls := raw.urls()
		for id, u := range userURLs {
			assert.Equal(t, u, urls[id], "user tab %s is untouched", id)
		}
		assert.Equal(t, lastURL["B"], urls[tabOf["B"]], "B's tab is untouched")
		assert.Len(t, urls, 4, "the failed call opened no tab")

		// The call after opens a new tab, again of the agent's own.
		want := site + "/form?owner=A&step=again"
		res, err := tl.Navigate(stepCtx(t), convs[0], tools.NavigateInput{URL: want})
		require.NoError(t, err)
		assert.Equal(t, want, res.URL)
		var fresh string
		for id, u := range raw.urls() {
			if u == want {
				fresh = id
			}
		}
		require.NotEmpty(t, fresh)
		assert.NotEqual(t, closed, fresh)
		assert.NotContains(t, userURLs, fresh)
		tabOf["A"], lastURL["A"] = fresh, want
	})

	t.Run("use_active_tab adopts a user tab and Close leaves it open", func(t *testing.T) {
		inv := browserbackend.Invocation{ConversationID: "conv-C", InterfaceID: "cli"}
		res, err := tl.Attach(stepCtx(t), inv, tools.AttachInput{UseActiveTab: true})
		require.NoError(t, err)
		assert.True(t, strings.Contains(res.URL, "/user?n="), "C adopted a user tab, not an agent's: %s", res.URL)
		snap, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
		require.NoError(t, err)
		assert.Equal(t, res.URL, snap.URL, "C stays in the tab it adopted")
		_, err = tl.Close(stepCtx(t), inv, tools.ReleaseInput{})
		require.NoError(t, err)
		assert.Equal(t, userURLs, pick(raw.urls(), userURLs), "every user tab is still open, unchanged")
	})

	t.Run("Close closes the agent's tabs only", func(t *testing.T) {
		for _, inv := range convs {
			_, err := tl.Close(stepCtx(t), inv, tools.ReleaseInput{})
			require.NoError(t, err, inv.ConversationID)
		}
		assert.Equal(t, userURLs, raw.urls(), "the user's three tabs are open and were never navigated")
	})
}

// pick returns the entries of m whose keys are in keys.
func pick(m, keys map[string]string) map[string]string {
	out := make(map[string]string)
	for k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// alternateInOwnTabs runs ten alternating navigate / snapshot / click calls
// of the two conversations convs through tl, in a browser (seen by raw)
// whose user tabs are userURLs, and checks after each that every call ran
// in its conversation's own tab on backend kind and that no user tab was
// navigated. It returns each owner's ("A", "B") target id and last URL.
func alternateInOwnTabs(t *testing.T, tl *tools.Tools, raw *rawCDP, site string, convs []browserbackend.Invocation,
	userURLs map[string]string, kind browserbackend.Kind) (tabOf, lastURL map[string]string) {
	t.Helper()
	owners := []string{"A", "B"}
	tabOf = map[string]string{} // owner → target id of the conversation's tab
	lastURL = map[string]string{}
	var orders [][]string
	for step := range 10 {
		i := step % 2
		inv, owner := convs[i], owners[i]
		switch op := []string{"navigate", "snapshot", "click"}[(step/2)%3]; op {
		case "navigate":
			// Every other navigation changes site (127.0.0.1 ↔ localhost),
			// so the tab moves to a new renderer process, which is what
			// makes Chromium move it in Target.getTargets.
			base := site
			if (step/2)%2 == 0 {
				base = strings.Replace(site, "127.0.0.1", "localhost", 1)
			}
			want := fmt.Sprintf("%s/form?owner=%s&step=%d", base, owner, step)
			res, err := tl.Navigate(stepCtx(t), inv, tools.NavigateInput{URL: want})
			require.NoError(t, err, "step %d: %s navigates", step, owner)
			assert.Equal(t, want, res.URL, "step %d", step)
			assert.Equal(t, kind, res.Backend)
			lastURL[owner] = want
			if tabOf[owner] == "" {
				for id, u := range raw.urls() {
					if u == want {
						tabOf[owner] = id
					}
				}
				require.NotEmpty(t, tabOf[owner], "step %d: %s's tab is found by its URL", step, owner)
				assert.NotContains(t, userURLs, tabOf[owner], "step %d: %s works in a tab of its own", step, owner)
			}
		case "snapshot":
			res, err := tl.Read().Snapshot(stepCtx(t), inv, tools.SnapshotInput{})
			require.NoError(t, err, "step %d: %s snapshots", step, owner)
			assert.Equal(t, lastURL[owner], res.URL, "step %d: %s's snapshot reads its own page", step, owner)
			assert.Contains(t, res.Text, "owner "+owner, "step %d", step)
		case "click":
			_, err := tl.Act().Click(stepCtx(t), inv, tools.ElementInput{Target: tools.Target{Selector: "#press"}})
			require.NoError(t, err, "step %d: %s clicks", step, owner)
			assert.Equal(t, "pressed by "+owner, raw.eval(tabOf[owner], `document.getElementById('out').textContent`),
				"step %d: the click landed in %s's tab", step, owner)
		}
		urls := raw.urls()
		for o, id := range tabOf {
			assert.Equal(t, lastURL[o], urls[id], "step %d: %s's tab (target %s) shows its page", step, o, id)
		}
		for id, u := range userURLs {
			assert.Equal(t, u, urls[id], "step %d: user tab %s is untouched", step, id)
		}
		assert.Len(t, urls, 3+len(tabOf), "step %d: no other tab was opened", step)
		var order []string
		for _, p := range raw.pages() {
			order = append(order, p.TargetID)
		}
		orders = append(orders, order)
	}
	t.Logf("Target.getTargets page order after each step: %v", orders)
	reordered := false
	for i := 1; i < len(orders); i++ {
		if len(orders[i]) == len(orders[i-1]) && !slices.Equal(orders[i], orders[i-1]) {
			reordered = true
		}
	}
	assert.True(t, reordered, "Target.getTargets changed its order while the tabs navigated: %v", orders)
	return tabOf, lastURL
}

// TestHostBridgeThreeUserTabs_TwoConversationsStayInTheirOwnTabs: as the
// cdp-inspect test, over the desktop bridge with each conversation in its
// own tab (bridge.CDPInspectTabs): a browser with three user tabs, ten
// alternating calls of two conversations while Target.getTargets reorders,
// each in its own tab, the user's tabs never navigated; a conversation
// whose tab the user closed gets target_not_found, no failover, and a new
// tab on its next call.
func TestHostBridgeThreeUserTabs_TwoConversationsStayInTheirOwnTabs(t *testing.T) {
	site := startOwnerSite(t)
	b := chromiumtest.Start(t, chromiumtest.WithStartURL(site+"/user?n=1"))
	raw := dialRaw(t, b)
	for _, n := range []string{"2", "3"} {
		raw.call("Target.createTarget", map[string]any{"url": site + "/user?n=" + n}, "")
	}
	userURLs := raw.urls()
	require.Len(t, userURLs, 3, "setup: three user tabs")
	h := startRuntime(t)
	runBridgeOn(t, h, b, true)
	tl := h.tools(t)
	convs := []browserbackend.Invocation{h.invocation("conv-A"), h.invocation("conv-B")}
	tabOf, lastURL := alternateInOwnTabs(t, tl, raw, site, convs, userURLs, browserbackend.KindHostBridge)

	closed := tabOf["A"]
	raw.call("Target.closeTarget", map[string]any{"targetId": closed}, "")
	raw.waitDestroyed(closed)
	_, err := tl.Read().Snapshot(stepCtx(t), convs[0], tools.SnapshotInput{})
	require.Error(t, err)
	var be *browserbackend.Error
	require.True(t, errors.As(err, &be), "a backend error: %v", err)
	assert.Equal(t, browserbackend.ClassProtocol, be.Class, "no failover material: %v", err)
	assert.Equal(t, browserbackend.CodeTargetNotFound, be.Code, "%v", err)
	urls := raw.urls()
	for id, u := range userURLs {
		assert.Equal(t, u, urls[id], "user tab %s is untouched", id)
	}
	assert.Equal(t, lastURL["B"], urls[tabOf["B"]], "B's tab is untouched")

	want := site + "/form?owner=A&step=again"
	res, err := tl.Navigate(stepCtx(t), convs[0], tools.NavigateInput{URL: want})
	require.NoError(t, err)
	assert.Equal(t, want, res.URL)
	assert.Equal(t, browserbackend.KindHostBridge, res.Backend)
	var fresh string
	for id, u := range raw.urls() {
		if u == want {
			fresh = id
		}
	}
	require.NotEmpty(t, fresh)
	assert.NotEqual(t, closed, fresh)
	assert.NotContains(t, userURLs, fresh)
}
