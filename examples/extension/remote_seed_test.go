package extension_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy/remote"
)

// windowOf returns the id of the window tab tabID is in.
func (rs *remoteStack) windowOf(t *testing.T, tabID int) int {
	t.Helper()
	return rs.intOf(t, fmt.Sprintf("chrome.tabs.get(%d).then((x) => x.windowId)", tabID))
}

// openTabs returns the ids of every open tab.
func (rs *remoteStack) openTabs(t *testing.T) []int {
	t.Helper()
	return rs.intsOf(t, `chrome.tabs.query({}).then((ts) => ts.map((x) => x.id))`)
}

// tabWithURL returns the id of the one open tab showing u.
func (rs *remoteStack) tabWithURL(t *testing.T, u string) int {
	t.Helper()
	ids := rs.intsOf(t, fmt.Sprintf(`chrome.tabs.query({}).then((ts) => ts.filter((x) => (x.url || x.pendingUrl) === %q).map((x) => x.id))`, u))
	require.Len(t, ids, 1, "tabs showing %s", u)
	return ids[0]
}

// setBorrowConfirm sets the browser user's borrow confirmation the way the
// popup's checkbox does.
func (rs *remoteStack) setBorrowConfirm(t *testing.T, on bool) {
	t.Helper()
	rs.workerEval(t, fmt.Sprintf(`chrome.storage.local.get('settings').then(({settings}) =>
		chrome.storage.local.set({settings: {...(settings || {}), borrowConfirm: %t}})).then(() => true)`, on))
}

// answerBorrow clicks Allow or Deny in the confirmation window that the
// extension opened (ask number n of this worker life), as the user would.
func (rs *remoteStack) answerBorrow(t *testing.T, n int, allow bool) {
	t.Helper()
	rs.workerEval(t, fmt.Sprintf("vellumRemote.whenConfirm('asks', %d)", n))
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	c := dialCDP(t, rs.browser.BrowserWSURL)
	session := attachTarget(ctx, t, c, func(typ, url string) bool {
		return typ == "page" && strings.HasPrefix(url, ExtensionOrigin+"/confirm.html")
	})
	button := map[bool]string{true: "allow", false: "deny"}[allow]
	require.NoError(t, c.call(ctx, session, "Runtime.evaluate", map[string]any{
		// The click is queued after the answer: it closes this window, which
		// must not race the evaluate's own reply.
		"expression": fmt.Sprintf(`new Promise((r) => document.readyState === 'complete' ? r() : addEventListener('load', r))
			.then(() => { setTimeout(() => document.getElementById(%q).click(), 0); })`, button),
		"awaitPromise": true,
	}, nil))
}

// userClick clicks at x, y in the page showing u through the browser's own
// DevTools connection: real input, as the browser user's.
func (rs *remoteStack) userClick(t *testing.T, u string, x, y int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	c := dialCDP(t, rs.browser.BrowserWSURL)
	session := attachTarget(ctx, t, c, func(typ, url string) bool { return typ == "page" && url == u })
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		require.NoError(t, c.call(ctx, session, "Input.dispatchMouseEvent",
			map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}, nil))
	}
}

// onTabAsync is onTab on its own goroutine.
func onTabAsync(c *browserbackend.Client, tabID int, method string, params any) <-chan sendResult {
	ch := make(chan sendResult, 1)
	go func() {
		raw, err := onTab(c, tabID, method, params)
		ch <- sendResult{raw, err}
	}()
	return ch
}

func requireCode(t *testing.T, err error, sentinel *browserbackend.Error, what string) {
	t.Helper()
	require.ErrorIs(t, err, sentinel, what)
	require.ErrorIs(t, err, browserbackend.ErrProtocol, what)
}

// The seed-003 behaviours of remote tasks, on one browser and one paired
// extension: Agent Windows, borrow and return under the user's
// confirmation, observed popups, request_help, unsupported file transfer,
// and the cleanup of a disconnect with a failed return (last: it drops the
// socket).
func TestRemote_SeedTaskBehaviours(t *testing.T) {
	rs := startRemoteStack(t, remote.Limits{})
	fx := startFixtures(t)
	rs.pairInPopup(t)
	rs.waitExtension(t)
	device := rs.deviceID(t)
	userWindow := rs.windowOf(t, rs.userTab(t, fx.page("user-home")))

	t.Run("AgentWindowHoldsTheTaskTabs", func(t *testing.T) {
		c := rs.taskClient(t, "seed-window")
		first := int(openPage(t, c, fx.page("window-first")).ID)
		var second tab
		send(t, c, "Vellum.createTab", map[string]any{}, &second)
		other := int(openPage(t, rs.taskClient(t, "seed-window-other"), fx.page("window-other")).ID)

		win := rs.windowOf(t, first)
		assert.NotEqual(t, userWindow, win, "a task's tab opens in its own window")
		assert.Equal(t, win, rs.windowOf(t, int(second.ID)), "tab_create opens the task's next tab in the same window")
		assert.NotEqual(t, win, rs.windowOf(t, other), "each task has its own window")
		assert.Equal(t, "window-first", titleOf(t, c, first))
	})

	t.Run("BorrowConfirmedOrDeclinedThenReturned", func(t *testing.T) {
		for _, allow := range []bool{true, false} {
			name := map[bool]string{true: "allowed", false: "declined"}[allow]
			t.Run(name, func(t *testing.T) {
				c := rs.taskClient(t, "seed-borrow-"+name)
				own := int(openPage(t, c, fx.page("borrow-own-"+name)).ID)
				agentWindow := rs.windowOf(t, own)
				user := rs.userTab(t, fx.page("borrow-user-"+name))
				home := rs.windowOf(t, user)

				// The request's flags cannot switch the confirmation off.
				asks := rs.intOf(t, "vellumRemote.confirm.asks")
				res := sendAsync(context.Background(), c, "Vellum.attach", map[string]any{"tabId": user,
					"confirm": false, "borrowConfirm": false, "skipConfirmation": true})
				rs.answerBorrow(t, asks+1, allow)
				r := waitResult(t, res)
				if !allow {
					requireCode(t, r.err, remote.ErrBorrowDeclined, "a declined borrow")
					_, err := onTab(c, user, "Runtime.evaluate", map[string]any{"expression": "1"})
					requireCode(t, err, remote.ErrTabNotOwned, "a read of the declined tab")
					assert.Equal(t, home, rs.windowOf(t, user), "a declined tab stays in its window")
					return
				}
				require.NoError(t, r.err)
				assert.Equal(t, "borrow-user-"+name, titleOf(t, c, user), "content access after the borrow")
				assert.Equal(t, agentWindow, rs.windowOf(t, user), "the borrowed tab moves into the Agent Window")

				// One claim per tab: neither another task nor the same one again asks.
				_, err := trySend(rs.taskClient(t, "seed-borrow-second"), "Vellum.attach", map[string]any{"tabId": user})
				requireCode(t, err, remote.ErrTabNotOwned, "a second borrow claim")
				assert.Equal(t, asks+1, rs.intOf(t, "vellumRemote.confirm.asks"), "a refused claim asks nobody")

				send(t, c, "Vellum.detach", map[string]any{"tabId": user}, nil)
				assert.Equal(t, home, rs.windowOf(t, user), "the returned tab is back in its window")
				assert.False(t, rs.debugged(t, user))
				_, err = onTab(c, user, "Runtime.evaluate", map[string]any{"expression": "1"})
				requireCode(t, err, remote.ErrTabNotOwned, "a read after the return")
			})
		}
	})

	t.Run("ObservedPopupGrantedOneOutsideTheWindowRefused", func(t *testing.T) {
		c := rs.taskClient(t, "seed-popup")
		src := int(openPage(t, c, fx.page("popup-source")).ID)
		agentWindow := rs.windowOf(t, src)
		sameURL, otherURL := fx.page("popup-same-window"), fx.page("popup-other-window")
		// The left half is a target=_blank link (a tab in the same window),
		// the right half opens a popup window.
		send(t, c, "Runtime.evaluate", map[string]any{"expression": fmt.Sprintf(`
			document.body.innerHTML = '<a href="%s" target="_blank" style="position:fixed;left:0;top:0;width:50%%;height:100%%">same</a>'
				+ '<div id="pop" style="position:fixed;right:0;top:0;width:50%%;height:100%%">popup</div>';
			document.getElementById('pop').onclick = () => window.open(%q, '', 'popup,width=300,height=300');
			true`, sameURL, otherURL), "returnByValue": true}, nil)
		width := rs.intOf(t, fmt.Sprintf(`chrome.tabs.get(%d).then((x) => x.width)`, src))
		// Observation intervals and budgets end when the test says so.
		rs.workerEval(t, "vellumRemote.manualObservation()")

		click := func(x int, counter string) {
			n := rs.intOf(t, "vellumRemote.ownership."+counter)
			for _, typ := range []string{"mousePressed", "mouseReleased"} {
				armed := rs.intOf(t, "vellumRemote.ownership.armed")
				candidates := rs.intOf(t, "vellumRemote.ownership.candidates")
				res := onTabAsync(c, src, "Input.dispatchMouseEvent",
					map[string]any{"type": typ, "x": x, "y": 40, "button": "left", "clickCount": 1})
				rs.workerEval(t, fmt.Sprintf("vellumRemote.whenOwnership('armed', %d)", armed+1))
				if typ == "mouseReleased" {
					// The target arrived while the release's interval was open.
					rs.workerEval(t, fmt.Sprintf("vellumRemote.whenOwnership('candidates', %d)", candidates+1))
				}
				assert.Positive(t, rs.intOf(t, "vellumRemote.expireObservation()"), "the open interval")
				require.NoError(t, waitResult(t, res).err)
			}
			assert.Equal(t, n+1, rs.intOf(t, "vellumRemote.ownership."+counter))
		}

		click(width/4, "observed")
		same := rs.tabWithURL(t, sameURL)
		rs.waitLoaded(t, same)
		assert.Equal(t, agentWindow, rs.windowOf(t, same))
		assert.Equal(t, "popup-same-window", titleOf(t, c, same), "the observed tab is the task's")

		click(width*3/4, "notObserved")
		other := rs.tabWithURL(t, otherURL)
		assert.NotEqual(t, agentWindow, rs.windowOf(t, other), "window.open opened a popup window")
		_, err := onTab(c, other, "Runtime.evaluate", map[string]any{"expression": "1"})
		requireCode(t, err, remote.ErrTabNotOwned, "a cross-window popup needs an explicit borrow")
		// Which input arms observation (click and key phases only) is
		// test/observe.test.mjs's.
	})

	t.Run("RequestHelpAnsweredOrCancelled", func(t *testing.T) {
		for _, outcome := range []string{remote.HelpAnswered, remote.HelpCancelled} {
			t.Run(outcome, func(t *testing.T) {
				conv := "seed-help-" + outcome
				c := rs.taskClient(t, conv)
				u := fx.page("help-" + outcome)
				tabID := int(openPage(t, c, u).ID)
				waiting := rs.intOf(t, "vellumRemote.help.waiting")
				res := sendAsync(context.Background(), c, "Vellum.requestHelp",
					map[string]any{"tabId": tabID, "message": "please sign in"})
				rs.workerEval(t, fmt.Sprintf("vellumRemote.whenHelp('waiting', %d)", waiting+1))
				// The bar is in the page (a closed shadow root: only its host is visible).
				raw, err := onTab(c, tabID, "Runtime.evaluate", map[string]any{"awaitPromise": true, "returnByValue": true,
					"expression": `new Promise((resolve) => {
						const check = () => { if (document.querySelector('[id^="bc-help-"]')) resolve(innerWidth); };
						new MutationObserver(check).observe(document.documentElement, {childList: true, subtree: true});
						check();
					})`})
				require.NoError(t, err)
				var width int
				require.NoError(t, json.Unmarshal(mustValue(t, raw), &width))

				// While the task waits, the UI channel answers; the task's own
				// input to the tab is refused.
				ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
				defer cancel()
				_, err = rs.srv.UI().TaskPreview(ctx, device, conv)
				require.NoError(t, err, "a preview while the task waits for help")
				_, err = onTab(c, tabID, "Input.dispatchMouseEvent",
					map[string]any{"type": "mousePressed", "x": width - 58, "y": 28, "button": "left", "clickCount": 1})
				requireCode(t, err, remote.ErrHelpPending, "the task clicking its own help bar")

				x := width - 58 // Done
				if outcome == remote.HelpCancelled {
					x = width - 166
				}
				rs.userClick(t, u, x, 28)
				r := waitResult(t, res)
				require.NoError(t, r.err)
				var got struct{ Outcome string }
				require.NoError(t, json.Unmarshal(r.raw, &got))
				assert.Equal(t, outcome, got.Outcome)
				raw, err = onTab(c, tabID, "Runtime.evaluate", map[string]any{
					"expression": `!!document.querySelector('[id^="bc-help-"]')`, "returnByValue": true})
				require.NoError(t, err)
				assert.Equal(t, "false", string(mustValue(t, raw)), "the bar is gone")
			})
		}
	})

	t.Run("UnsupportedUploadAndDownload", func(t *testing.T) {
		c := rs.taskClient(t, "seed-files")
		tabID := int(openPage(t, c, fx.page("files")).ID)
		for _, m := range []struct {
			method string
			params map[string]any
		}{
			{"DOM.setFileInputFiles", map[string]any{"files": []string{"/etc/hostname"}, "backendNodeId": 1}},
			{"Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": "/tmp"}},
			{"Input.dispatchDragEvent", map[string]any{"type": "drop", "x": 1, "y": 1,
				"data": map[string]any{"items": []any{}, "files": []string{"/etc/hostname"}, "dragOperationsMask": 1}}},
		} {
			_, err := onTab(c, tabID, m.method, m.params)
			requireCode(t, err, remote.ErrUnsupported, m.method)
		}
	})

	t.Run("DisconnectCleanupWithAFailedReturn", func(t *testing.T) {
		rs.setBorrowConfirm(t, false)
		c := rs.taskClient(t, "seed-disconnect")
		created := int(openPage(t, c, fx.page("dc-created")).ID)
		agentWindow := rs.windowOf(t, created)
		returned, stuck, kept := rs.userTab(t, fx.page("dc-returned")), rs.userTab(t, fx.page("dc-stuck")), rs.userTab(t, fx.page("dc-user"))
		home := rs.windowOf(t, returned)
		send(t, c, "Vellum.attach", map[string]any{"tabId": returned}, nil)
		send(t, c, "Vellum.attach", map[string]any{"tabId": stuck}, nil)
		observed := rs.tabWithURL(t, fx.page("popup-same-window")) // seed-popup's
		rs.workerEval(t, fmt.Sprintf("vellumRemote.failReturnOf(%d)", stuck))

		connects := rs.intOf(t, "vellumRemote.stats.connects")
		releases := rs.intOf(t, "vellumRemote.ownership.releases")
		require.True(t, rs.srv.Disconnect(device))
		rs.workerEval(t, fmt.Sprintf("vellumRemote.whenReleased(%d)", releases+1))

		open := rs.openTabs(t)
		assert.NotContains(t, open, created, "a task-created tab is closed")
		assert.Contains(t, open, kept, "a user tab survives")
		assert.Contains(t, open, observed, "an observed tab is released, not closed")
		assert.False(t, rs.debugged(t, observed))
		assert.Equal(t, home, rs.windowOf(t, returned), "a borrowed tab goes back to its window")
		assert.False(t, rs.debugged(t, returned))
		assert.Equal(t, agentWindow, rs.windowOf(t, stuck), "a failed return keeps its tab in the Agent Window, which stays")
		assert.False(t, rs.debugged(t, stuck), "its access ended all the same")
		assert.JSONEq(t, fmt.Sprintf(`[{"tabId":%d,"windowId":%d}]`, stuck, agentWindow),
			string(rs.workerEval(t, "vellumRemote.pendingReturns()")))
		assert.Equal(t, connects, rs.intOf(t, "vellumRemote.stats.connects"), "no reconnect while the return is unresolved")

		// The user moves the tab out of the Agent Window: the extension connects again.
		rs.workerEval(t, fmt.Sprintf("chrome.windows.create({tabId: %d}).then(() => true)", stuck))
		rs.workerEval(t, fmt.Sprintf("vellumRemote.when('connects', %d)", connects+1))
		assert.Contains(t, rs.openTabs(t), stuck)
	})
}

// waitLoaded returns once tab tabID finished loading a page other than
// about:blank (an event, not a poll).
func (rs *remoteStack) waitLoaded(t *testing.T, tabID int) {
	t.Helper()
	rs.workerEval(t, fmt.Sprintf(`new Promise((resolve) => {
		const done = (tab) => { if (tab && tab.id === %d && tab.status === 'complete' && tab.url !== 'about:blank') resolve(true); };
		chrome.tabs.onUpdated.addListener((_id, _info, tab) => done(tab));
		chrome.tabs.get(%d).then(done);
	})`, tabID, tabID))
}
