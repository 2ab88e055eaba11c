package extension_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy/remote"
)

// deviceID returns the id of the one paired device.
func (rs *remoteStack) deviceID(t *testing.T) string {
	t.Helper()
	devices, err := rs.srv.Devices(context.Background())
	require.NoError(t, err)
	require.Len(t, devices, 1)
	return devices[0].DeviceID
}

// taskClient is a client of conversation conv pinned to the extension.
func (rs *remoteStack) taskClient(t *testing.T, conv string) *browserbackend.Client {
	t.Helper()
	c := rs.rt.Selector.Client(browserbackend.Invocation{ConversationID: conv, InterfaceID: "cli",
		ActorPrincipalID: rs.rt.Auth.ActorPrincipalID(), Mode: browserbackend.Mode("extension")})
	t.Cleanup(func() { c.Close() })
	return c
}

// userTab opens u in a new tab the way the user would (no task asks for
// it) and returns its id once the page has loaded.
func (rs *remoteStack) userTab(t *testing.T, u string) int {
	t.Helper()
	raw := rs.workerEval(t, fmt.Sprintf(`new Promise((resolve) => {
		let id = null;
		const done = (tab) => { if (tab && tab.id === id && tab.status === 'complete') resolve(id); };
		chrome.tabs.onUpdated.addListener((_id, _info, tab) => done(tab));
		// In the browser's first window: never an Agent Window.
		chrome.windows.getAll({windowTypes: ['normal']})
			.then((ws) => chrome.tabs.create({url: %q, active: false, windowId: Math.min(...ws.map((w) => w.id))}))
			.then((tab) => { id = tab.id; chrome.tabs.get(id).then(done); });
	})`, u))
	var id int
	require.NoError(t, json.Unmarshal(raw, &id))
	return id
}

// onTab sends one command to the tab tabID (a cdpSessionId of decimal digits).
func onTab(c *browserbackend.Client, tabID int, method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	p, _ := json.Marshal(params)
	return c.Send(ctx, browserbackend.Command{Method: method, Params: p, SessionID: strconv.Itoa(tabID)})
}

func titleOf(t *testing.T, c *browserbackend.Client, tabID int) string {
	t.Helper()
	raw, err := onTab(c, tabID, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true})
	require.NoError(t, err)
	var s string
	require.NoError(t, json.Unmarshal(mustValue(t, raw), &s))
	return s
}

func mustValue(t *testing.T, raw json.RawMessage) json.RawMessage {
	var ev struct {
		Result struct{ Value json.RawMessage }
	}
	require.NoError(t, json.Unmarshal(raw, &ev))
	return ev.Result.Value
}

func requireNotOwned(t *testing.T, err error, what string) {
	t.Helper()
	var be *browserbackend.Error
	require.ErrorAs(t, err, &be, what)
	assert.Equal(t, browserbackend.ClassProtocol, be.Class, what)
	assert.Equal(t, remote.CodeTabNotOwned, be.Code, what)
}

func (rs *remoteStack) intsOf(t *testing.T, expr string) []int {
	t.Helper()
	var out []int
	require.NoError(t, json.Unmarshal(rs.workerEval(t, expr), &out))
	return out
}

// debugged reports whether a debugger is attached to tab tabID (the
// extension's; the test's own CDP connection attaches only to its pages).
func (rs *remoteStack) debugged(t *testing.T, tabID int) bool {
	t.Helper()
	return mustBool(t, rs.workerEval(t, fmt.Sprintf(
		`chrome.debugger.getTargets().then((ts) => ts.some((x) => x.tabId === %d && x.attached))`, tabID)))
}

func (rs *remoteStack) intOf(t *testing.T, expr string) int {
	t.Helper()
	var n int
	require.NoError(t, json.Unmarshal(rs.workerEval(t, expr), &n))
	return n
}

// REM-8.
func TestRemote_TabsOfATaskCloseOrReturnOnDisconnectUserTabsSurviveAndNothingIsReplayed(t *testing.T) {
	rs := startRemoteStack(t, remote.Limits{})
	fx := startFixtures(t)
	rs.pairInPopup(t)
	rs.waitExtension(t)
	device := rs.deviceID(t)
	rs.setBorrowConfirm(t, false) // the user lends tabs without being asked

	borrowed := rs.userTab(t, fx.page("user-borrowed"))
	untouched := rs.userTab(t, fx.page("user-untouched"))
	c := rs.taskClient(t, "remote-task")
	created := openPage(t, c, fx.page("task-created"))
	createdID := int(created.ID)
	assert.Equal(t, "task-created", titleOf(t, c, createdID), "the task reads the tab it created")

	// A tab the task neither created nor borrowed: no content read, no
	// screenshot, no input, no close; listing it stays available.
	_, err := onTab(c, untouched, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true})
	requireNotOwned(t, err, "a read of a user tab")
	_, err = onTab(c, untouched, "Page.captureScreenshot", map[string]any{"format": "png"})
	requireNotOwned(t, err, "a screenshot of a user tab")
	_, err = onTab(c, untouched, "Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": "a"})
	requireNotOwned(t, err, "input to a user tab")
	_, err = trySend(c, "Vellum.closeTab", map[string]any{"tabId": untouched})
	requireNotOwned(t, err, "closing a user tab")
	var list struct{ Tabs []tab }
	send(t, c, "Vellum.listTabs", map[string]any{}, &list)
	titles := map[int]string{}
	for _, tb := range list.Tabs {
		titles[int(tb.ID)] = tb.Title
	}
	assert.Equal(t, "user-untouched", titles[untouched], "listing tab titles stays available")

	// Borrowing makes a user tab readable; the debugger is attached to it.
	_, err = onTab(c, borrowed, "Runtime.evaluate", map[string]any{"expression": "1", "returnByValue": true})
	requireNotOwned(t, err, "a read before the borrow")
	send(t, c, "Vellum.attach", map[string]any{"tabId": borrowed}, nil)
	assert.Equal(t, "user-borrowed", titleOf(t, c, borrowed))
	// Another task cannot claim a borrowed tab, nor read it.
	other := rs.taskClient(t, "remote-other")
	_, err = trySend(other, "Vellum.attach", map[string]any{"tabId": borrowed})
	requireNotOwned(t, err, "a second borrow")
	_, err = onTab(other, createdID, "Runtime.evaluate", map[string]any{"expression": "1", "returnByValue": true})
	requireNotOwned(t, err, "another task's created tab")
	assert.True(t, rs.debugged(t, borrowed))
	assert.True(t, rs.debugged(t, createdID))
	assert.False(t, rs.debugged(t, untouched))

	// A command in flight on the created tab when the socket drops.
	send(t, c, "Vellum.selectTab", map[string]any{"tabId": createdID}, nil)
	releases := rs.intOf(t, "vellumRemote.ownership.releases")
	res := sendAsync(context.Background(), c, "Runtime.evaluate", fx.gatedEval("in-flight", 1))
	waitClosed(t, fx.gate("in-flight").started, "the page to start the command")
	require.True(t, rs.srv.Disconnect(device))
	r := waitResult(t, res)
	assert.ErrorIs(t, r.err, browserbackend.ErrTransport, "the command in flight fails with the socket")
	close(fx.gate("in-flight").release)

	rs.workerEval(t, fmt.Sprintf("vellumRemote.whenReleased(%d)", releases+1))
	open := rs.intsOf(t, `chrome.tabs.query({}).then((ts) => ts.map((x) => x.id))`)
	assert.NotContains(t, open, createdID, "the tab the task created is closed")
	assert.Contains(t, open, borrowed, "the borrowed tab stays open")
	assert.Contains(t, open, untouched, "the user's tab survives")
	assert.False(t, rs.debugged(t, borrowed), "the borrowed tab is returned: its debugger detached")
	assert.False(t, rs.debugged(t, untouched))
	var ws struct{ Closed, Returned int }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.ownership"), &ws))
	assert.Equal(t, 2, ws.Closed, "the tab each task's first command opened: remote-task's and remote-other's")
	assert.Equal(t, 1, ws.Returned)

	// Reconnected, the extension replays nothing and the returned tab is
	// no longer the task's.
	rs.workerEval(t, "vellumRemote.when('connects', 2)")
	rs.waitExtension(t)
	after := rs.taskClient(t, "remote-task") // its tab closed with the socket: a new one opens
	_, err = onTab(after, borrowed, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true})
	requireNotOwned(t, err, "a read of the returned tab")
	var before struct{ Requests, Duplicates int }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.stats"), &before))
	cr := rs.run(t, "remote-task", "'fresh'")
	assert.Equal(t, "fresh", evalValue(t, cr.Result))
	var now struct{ Requests, Duplicates int }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.stats"), &now))
	assert.Equal(t, before.Requests+2, now.Requests, "only the new commands ran: the tab's Vellum.attach and the evaluate")
	assert.Zero(t, now.Duplicates, "no request came twice")
}

// REM-9.
func TestRemote_UIChannelPreviewsBusyDeadlineMissingIDAndUnknownMethod(t *testing.T) {
	rs := startRemoteStack(t, remote.Limits{})
	fx := startFixtures(t)
	rs.pairInPopup(t)
	rs.waitExtension(t)
	device := rs.deviceID(t)
	c := rs.taskClient(t, "remote-ui")
	created := openPage(t, c, fx.page("preview"))
	// A viewport twice the preview's width: the frame must be scaled down.
	send(t, c, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	// The UI deadlines pass only when the test says so (an injected clock):
	// a slow machine never turns a preview into ui_deadline.
	rs.workerEval(t, "vellumRemote.ui.manualClock()")

	p, err := rs.srv.UI().TaskPreview(ctx, device, "remote-ui")
	require.NoError(t, err)
	assert.Equal(t, "jpeg", p.Format)
	assert.Equal(t, strconv.Itoa(int(created.ID)), p.TabID)
	assert.Equal(t, "preview", p.Title)
	assert.False(t, p.CapturedAt.IsZero())
	img, err := p.JPEG()
	require.NoError(t, err)
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(img))
	require.NoError(t, err, "the preview is a JPEG")
	assert.LessOrEqual(t, cfg.Width, 640)
	assert.Positive(t, cfg.Width)

	require.NoError(t, rs.srv.UI().TaskFocus(ctx, device, "remote-ui"))
	_, err = rs.srv.UI().TaskPreview(ctx, device, "no-such-task")
	requireUI(t, err, remote.UICodeNotFound, remote.UIReasonTaskUnavailable)

	// Captures are held before Chrome (a capture Chrome takes its time
	// with): a second preview while one runs is refused, and the held one
	// overruns its 3 s when the clock passes them.
	rs.workerEval(t, "vellumRemote.ui.hold()")
	captures := rs.intOf(t, "vellumRemote.ui.stats.captures")
	first := make(chan error, 1)
	go func() { _, err := rs.srv.UI().TaskPreview(ctx, device, "remote-ui"); first <- err }()
	rs.workerEval(t, fmt.Sprintf("vellumRemote.ui.when('captures', %d)", captures+1))
	_, err = rs.srv.UI().TaskPreview(ctx, device, "remote-ui")
	requireUI(t, err, remote.UICodeTimeout, remote.UIReasonPreviewBusy)
	assert.Equal(t, 1, rs.intOf(t, "vellumRemote.ui.expire()"), "only the held preview was waiting")
	select {
	case err = <-first:
	case <-ctx.Done():
		t.Fatal("the held preview got no answer")
	}
	requireUI(t, err, remote.UICodeTimeout, remote.UIReasonDeadline)
	settled := rs.intOf(t, "vellumRemote.ui.stats.settled")
	rs.workerEval(t, "vellumRemote.ui.release()")
	rs.workerEval(t, fmt.Sprintf("vellumRemote.ui.when('settled', %d)", settled+1))
	_, err = rs.srv.UI().TaskPreview(ctx, device, "remote-ui")
	require.NoError(t, err, "the tab takes a preview again once Chrome's capture settled")

	// Frames without a non-empty string id are consumed without a reply
	// or browser work (fed to the socket's frame handler in the worker).
	var before struct{ Replies, Consumed, Captures int }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.ui.stats"), &before))
	assert.Equal(t, "[true,true,true,true]", string(rs.workerEval(t,
		`[undefined, null, '', 7].map((id) => vellumRemote.ui.frame({id, method: 'ui.task_preview', params: {session_id: 'remote-ui'}}))`)))
	// An unknown ui.* method answers unknown_method; being the next
	// request, it is the only reply since.
	_, err = rs.srv.UI().Call(ctx, device, "ui.task_dance", map[string]string{"session_id": "remote-ui"})
	requireUI(t, err, remote.UICodeUnknownMethod, "")
	var now struct{ Replies, Consumed, Captures int }
	require.NoError(t, json.Unmarshal(rs.workerEval(t, "vellumRemote.ui.stats"), &now))
	assert.Equal(t, before.Consumed+4, now.Consumed)
	assert.Equal(t, before.Replies+1, now.Replies, "no reply to a frame without an id")
	assert.Equal(t, before.Captures, now.Captures, "no capture for a frame without an id")

	_, err = rs.srv.UI().Call(ctx, device, "ui.task_preview", map[string]any{"session_id": 7})
	requireUI(t, err, remote.UICodeInvalidParams, "")
}

func requireUI(t *testing.T, err error, code, reason string) {
	t.Helper()
	var be *browserbackend.Error
	require.True(t, errors.As(err, &be), "%v", err)
	assert.Equal(t, code, be.Code, "%v", err)
	assert.Equal(t, reason, be.Detail, "%v", err)
	assert.Equal(t, browserbackend.KindExtension, be.Backend)
}
