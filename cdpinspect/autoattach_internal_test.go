package cdpinspect

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
)

// sentCommand is a command the fake browser received.
type sentCommand struct {
	method, params, sessionID string
}

// autoAttachBrowser is a browser WebSocket that opens tabs T1, T2, … (one
// per Target.createTarget), attaches session S-<target> to them, answers
// every other command with {}, reports every command on got, and writes
// every frame sent on push (events; push may be nil). A Runtime.evaluate of
// "die" drops the socket instead of answering; one of "close-tab" on a
// tab's session closes that tab as a user would, answering it as Chrome
// answers a command on a session that went away, and sending no event;
// one of "close-tab-detach" closes it too, sending the session's
// Target.detachedFromTarget and no answer.
// One of "crash" kills the tab's renderer: Inspector.targetCrashed on that
// session and no answer; from then on, until a Page.navigate revives it,
// the tab's sessions get no answer to commands its renderer would serve,
// and Inspector.enable is answered without the event (as Chrome was seen
// to do on CI).
func autoAttachBrowser(t *testing.T, got chan<- sentCommand, push <-chan string) string {
	var (
		mu       sync.Mutex
		tabs     []string // the tabs open, of those it opened on any of its connections
		created  int
		attaches = map[string]int{}  // per target
		crashed  = map[string]bool{} // targets whose renderer is dead
		closed   = map[string]bool{} // targets closed by "close-tab"
	)
	// targetOf is the target of a session: S-<target>, or S-<target>.<n>
	// for the target's n-th attach.
	targetOf := func(sessionID string) string {
		id, _, _ := strings.Cut(strings.TrimPrefix(sessionID, "S-"), ".")
		return id
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		go func() {
			for {
				select {
				case ev := <-push:
					if ws.Write(r.Context(), websocket.MessageText, []byte(ev)) != nil {
						return
					}
				case <-r.Context().Done():
					return
				}
			}
		}()
		for {
			_, data, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			var f frame
			_ = json.Unmarshal(data, &f)
			got <- sentCommand{method: f.Method, params: string(f.Params), sessionID: f.SessionID}
			res := `{}`
			mu.Lock()
			gone := f.SessionID != "" && closed[targetOf(f.SessionID)]
			dead := f.SessionID != "" && crashed[targetOf(f.SessionID)]
			if dead && f.Method == "Page.navigate" {
				delete(crashed, targetOf(f.SessionID)) // a new renderer
			}
			mu.Unlock()
			if gone {
				_ = ws.Write(r.Context(), websocket.MessageText, sessionNotFound(f.ID))
				continue
			}
			if dead && f.Method != "Page.navigate" && f.Method != "Inspector.enable" && !strings.HasPrefix(f.Method, "Target.") {
				continue // queued for a renderer that is not there
			}
			switch f.Method {
			case "Runtime.evaluate":
				if strings.Contains(string(f.Params), `"die"`) {
					return
				}
				if strings.Contains(string(f.Params), `"crash"`) {
					mu.Lock()
					crashed[targetOf(f.SessionID)] = true
					mu.Unlock()
					_ = ws.Write(r.Context(), websocket.MessageText, []byte(`{"method":"Inspector.targetCrashed","params":{},"sessionId":"`+f.SessionID+`"}`))
					continue
				}
				if strings.Contains(string(f.Params), `"close-tab-detach"`) {
					mu.Lock()
					tabs = slices.DeleteFunc(tabs, func(id string) bool { return id == targetOf(f.SessionID) })
					mu.Unlock()
					_ = ws.Write(r.Context(), websocket.MessageText, []byte(`{"method":"Target.detachedFromTarget","params":{"sessionId":"`+
						f.SessionID+`","targetId":"`+targetOf(f.SessionID)+`"}}`))
					continue
				}
				if strings.Contains(string(f.Params), `"close-tab"`) {
					mu.Lock()
					tabs = slices.DeleteFunc(tabs, func(id string) bool { return id == targetOf(f.SessionID) })
					closed[targetOf(f.SessionID)] = true
					mu.Unlock()
					_ = ws.Write(r.Context(), websocket.MessageText, sessionNotFound(f.ID))
					continue
				}
			case "Target.getTargetInfo":
				var p struct {
					TargetID string `json:"targetId"`
				}
				_ = json.Unmarshal(f.Params, &p)
				mu.Lock()
				open := slices.Contains(tabs, p.TargetID)
				mu.Unlock()
				if !open {
					_ = ws.Write(r.Context(), websocket.MessageText, []byte(`{"id":`+strconv.FormatInt(f.ID, 10)+
						`,"error":{"code":-32602,"message":"No target with given id found"}}`))
					continue
				}
				res = `{"targetInfo":{"targetId":"` + p.TargetID + `","type":"page"}}`
			case "Target.getTargets":
				mu.Lock()
				infos := make([]string, len(tabs))
				for i, id := range tabs {
					infos[i] = `{"targetId":"` + id + `","type":"page","url":"about:blank"}`
				}
				mu.Unlock()
				res = `{"targetInfos":[` + strings.Join(infos, ",") + `]}`
			case "Target.createTarget":
				mu.Lock()
				created++
				id := "T" + strconv.Itoa(created)
				tabs = append(tabs, id)
				mu.Unlock()
				res = `{"targetId":"` + id + `"}`
			case "Target.attachToTarget":
				var p struct {
					TargetID string `json:"targetId"`
				}
				_ = json.Unmarshal(f.Params, &p)
				mu.Lock()
				attaches[p.TargetID]++
				sid := "S-" + p.TargetID
				if n := attaches[p.TargetID]; n > 1 {
					sid += "." + strconv.Itoa(n)
				}
				mu.Unlock()
				res = `{"sessionId":"` + sid + `"}`
			}
			_ = ws.Write(r.Context(), websocket.MessageText, []byte(`{"id":`+strconv.FormatInt(f.ID, 10)+`,"result":`+res+`}`))
		}
	}))
	t.Cleanup(srv.Close)
	return "ws://" + strings.TrimPrefix(srv.URL, "http://") + "/devtools/browser/x"
}

// sessionNotFound is Chrome's answer to command id on a session it does
// not have.
func sessionNotFound(id int64) []byte {
	return []byte(`{"id":` + strconv.FormatInt(id, 10) + `,"error":{"code":-32001,"message":"Session with given id not found."}}`)
}

// upTo returns the commands got receives up to and including the first
// one of method, leaving out those of the conversations' attaches (whose
// resume is sent on a goroutine of its own, in no fixed order).
func upTo(t *testing.T, got <-chan sentCommand, method string) []sentCommand {
	t.Helper()
	var out []sentCommand
	timeout := time.After(30 * time.Second)
	for {
		select {
		case c := <-got:
			switch {
			case c.method == "Target.getTargets", c.method == "Target.createTarget", c.method == "Target.attachToTarget",
				c.method == "Inspector.enable", strings.HasPrefix(c.sessionID, "S-"):
				continue
			}
			out = append(out, c)
			if c.method == method {
				return out
			}
		case <-timeout:
			require.FailNow(t, "the browser never received "+method, "%v", out)
		}
	}
}

// methods returns the methods of cs.
func methods(cs []sentCommand) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.method
	}
	return out
}

// Two conversations' views on one shared connection both turn
// browser-level auto-attach on and off, as the guards' popup hold does: the
// browser sees it turned on once, off only when the last holder lets go
// (here by closing its view), and the holder letting go first has the
// sessions of its own popups detached. An auto-attached target goes to the
// holder whose page opened it (and its session's events with it), never to
// the other; a waiting target no holder opened is resumed and detached by
// the connection itself.
func TestAutoAttachIsCountedAndRoutedPerSharedConnection(t *testing.T) {
	got, push := make(chan sentCommand, 64), make(chan string, 8)
	wsURL := autoAttachBrowser(t, got, push)
	p, ctx := fakeBrowserProvider(t, wsURL)

	a, err := p.build(ctx, "conv-a", bb.TabRequest{})
	require.NoError(t, err)
	b, err := p.build(ctx, "conv-b", bb.TabRequest{})
	require.NoError(t, err)
	defer a.Close()
	require.Equal(t, []string{"T1", "T2"}, []string{a.TargetID(), b.TargetID()})
	aEvents, stopA := a.Subscribe("")
	defer stopA()
	bEvents, stopB := b.Subscribe("")
	defer stopB()
	browser := func(v *Backend, method, params string) {
		t.Helper()
		_, err := v.Send(ctx, bb.Command{Method: method, Params: json.RawMessage(params), SessionID: bb.BrowserSessionID})
		require.NoError(t, err)
	}
	on := `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}`
	off := `{"autoAttach":false,"waitForDebuggerOnStart":false}` // as the guards sent it

	browser(a, "Target.setAutoAttach", on)
	browser(b, "Target.setAutoAttach", on)
	browser(b, "Browser.getVersion", "") // a marker: every command before it has arrived
	sent := upTo(t, got, "Browser.getVersion")
	assert.Equal(t, []string{"Target.setAutoAttach", "Browser.getVersion"}, methods(sent), "turned on once")
	assert.Equal(t, on, sent[0].params)

	// A's popup (its session and an event of it), a tab nobody's page
	// opened, then a marker event both views receive.
	push <- `{"method":"Target.attachedToTarget","params":{"sessionId":"P1","targetInfo":{"targetId":"PT1","type":"page","openerId":"T1"},"waitingForDebugger":true}}`
	push <- `{"method":"Fetch.requestPaused","params":{"requestId":"r1"},"sessionId":"P1"}`
	push <- `{"method":"Target.attachedToTarget","params":{"sessionId":"U1","targetInfo":{"targetId":"UT1","type":"page"},"waitingForDebugger":true}}`
	push <- `{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"M"}}}`
	var seenA, seenB []string
	for _, c := range []struct {
		ch   <-chan bb.Event
		seen *[]string
	}{{aEvents, &seenA}, {bEvents, &seenB}} {
		for ev := range c.ch {
			*c.seen = append(*c.seen, ev.Method+"@"+ev.SessionID)
			if ev.Method == "Target.targetCreated" {
				break
			}
		}
	}
	assert.Equal(t, []string{"Target.attachedToTarget@", "Fetch.requestPaused@P1", "Target.targetCreated@"}, seenA, "A gets its own popup")
	assert.Equal(t, []string{"Target.targetCreated@"}, seenB, "B never sees A's popup")
	sent = upTo(t, got, "Target.detachFromTarget")
	require.Len(t, sent, 2)
	assert.Equal(t, sentCommand{method: "Runtime.runIfWaitingForDebugger", sessionID: "U1"}, sent[0], "the unowned tab is resumed")
	assert.Equal(t, `{"sessionId":"U1"}`, sent[1].params, "and detached")

	// A lets go first: its popup's session is detached, auto-attach stays on.
	browser(a, "Target.setAutoAttach", off)
	browser(a, "Browser.getVersion", "")
	sent = upTo(t, got, "Browser.getVersion")
	assert.Equal(t, []string{"Target.detachFromTarget", "Browser.getVersion"}, methods(sent))
	assert.Equal(t, `{"sessionId":"P1"}`, sent[0].params)

	// B, the last holder, closes without turning it off: its Close does.
	require.NoError(t, b.Close())
	browser(a, "Browser.getVersion", "")
	sent = upTo(t, got, "Browser.getVersion")
	assert.Equal(t, []string{"Target.setAutoAttach", "Browser.getVersion"}, methods(sent), "off once, at the last holder")
	assert.Equal(t, `{"autoAttach":false,"waitForDebuggerOnStart":false,"flatten":true}`, sent[0].params, "with flatten, which Chrome requires at browser level")
}

// A lost socket fails its waiting calls before the shared connection learns
// it ended (the reader's onEnd). An invocation built in between must get a
// new connection, not the dead one: the fault suite saw the first command
// after an over-the-cap answer fail as transport on the old socket.
func TestBuildAfterALostSocketDialsANewOne(t *testing.T) {
	got := make(chan sentCommand, 256) // the commands are not the subject here
	wsURL := autoAttachBrowser(t, got, nil)
	reached, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	hook := func(s *settings) {
		s.connLost = func() {
			if first.CompareAndSwap(false, true) {
				close(reached)
				<-release
			}
		}
	}
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock()
	p, ctx := fakeBrowserProvider(t, wsURL, hook)

	old, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	_, err = old.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"die"}`)})
	require.ErrorIs(t, err, bb.ErrTransport, "the socket the browser dropped")
	<-reached // the reader has failed the call and not yet marked the connection ended

	next, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	defer next.Close()
	_, err = next.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
	unblock()
	require.NoError(t, err, "the next invocation runs on a new socket")
	assert.Equal(t, int64(2), p.ConnStats().Dials)
	old.Close()
}

// The user closes the conversation's tab, and the shared connection has not
// heard of it when the next invocation is built (the detach arrives later,
// or never reaches this socket first): the kept session is handed out, and
// its command fails as a Build that saw the closed tab fails — ClassProtocol,
// target_not_found, no failover — instead of a transport error that the
// selector reads as "no browser backend available". The next invocation
// opens a new tab.
func TestACommandOnAKeptSessionOfAClosedTabSaysTheTabWasClosed(t *testing.T) {
	got := make(chan sentCommand, 256) // the commands are not the subject here
	wsURL := autoAttachBrowser(t, got, nil)
	p, ctx := fakeBrowserProvider(t, wsURL)
	eval := func(b *Backend, expr string) error {
		_, err := b.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"` + expr + `"}`)})
		return err
	}

	first, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	require.NoError(t, eval(first, "1"))
	require.Equal(t, "T1", first.TargetID())
	first.Close()

	kept, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	require.Equal(t, "T1", kept.TargetID(), "the kept session, with nothing sent")
	err = eval(kept, "close-tab")
	again := eval(kept, "1")
	kept.Close()
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.ClassProtocol, e.Class, "no failover material: %v", err)
	assert.Equal(t, bb.CodeTargetNotFound, e.Code)
	assert.Equal(t, "Runtime.evaluate", e.Method)
	assert.Contains(t, e.Message, "the conversation's tab was closed (target T1)")
	require.ErrorAs(t, again, &e)
	assert.Equal(t, bb.CodeTargetNotFound, e.Code, "the next command on that Backend: %v", again)
	asked := 0
	for len(got) > 0 {
		if c := <-got; c.method == "Target.getTargetInfo" {
			asked++
		}
	}
	assert.Equal(t, 1, asked, "the browser is asked for the tab once")

	next, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err, "the next invocation opens a new tab")
	defer next.Close()
	assert.Equal(t, "T2", next.TargetID())
	require.NoError(t, eval(next, "1"))
}

// A conversation whose tab's renderer crashed gets a new session on the
// same tab at its next Build — the crash is recorded before the command in
// flight fails, so a Build right after that error never hands the crashed
// session out again — and that tab stays lost until a navigation:
// a command other than Page.navigate fails at once with page_lost, even
// when the new session's Inspector.enable probe is answered without
// Inspector.targetCrashed (the CI failure of
// TestFaultLostPageIsAnErrorNotABlankPage/cdp-inspect: the navigation's
// Page.enable waited for its deadline). After Page.navigate the tab
// answers again.
func TestABuildAfterACrashKeepsTheTabLostUntilANavigation(t *testing.T) {
	got := make(chan sentCommand, 256) // the commands are not the subject here
	wsURL := autoAttachBrowser(t, got, nil)
	p, ctx := fakeBrowserProvider(t, wsURL)
	send := func(b *Backend, method, params string) error {
		_, err := b.Send(ctx, bb.Command{Method: method, Params: json.RawMessage(params)})
		return err
	}

	first, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	err = send(first, "Runtime.evaluate", `{"expression":"crash"}`)
	require.ErrorIs(t, err, bb.ErrTargetCrashed)
	assert.True(t, first.st.crashed.Load(), "the session is marked crashed before its command fails")
	first.Close()

	next, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	defer next.Close()
	assert.Equal(t, "T1", next.TargetID(), "the conversation's tab")
	assert.NotEqual(t, first.SessionID(), next.SessionID(), "a fresh session")
	err = send(next, "Page.enable", `{}`)
	require.ErrorIs(t, err, bb.ErrPageLost, "not queued until the deadline")
	require.NoError(t, send(next, "Page.navigate", `{"url":"about:blank"}`))
	require.NoError(t, send(next, "Page.enable", `{}`), "the navigation revived the tab")
}

// A command whose session's detach arrives while it waits — the tab closed
// before or while it was sent; the socket cannot tell which — fails as a
// Build that saw the closed tab fails: target_not_found, not a transport
// error that the selector reads as "no browser backend available" (make
// stress: TestCDPInspectThreeUserTabs…/the user closed A's tab).
func TestACommandFailedByItsSessionsDetachSaysTheTabWasClosed(t *testing.T) {
	got := make(chan sentCommand, 256) // the commands are not the subject here
	wsURL := autoAttachBrowser(t, got, nil)
	p, ctx := fakeBrowserProvider(t, wsURL)
	b, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err)
	_, err = b.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"close-tab-detach"}`)})
	b.Close()
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.ClassProtocol, e.Class, "no failover material: %v", err)
	assert.Equal(t, bb.CodeTargetNotFound, e.Code)
	assert.True(t, e.Dispatched, "the command was sent")

	next, err := p.build(ctx, "conv", bb.TabRequest{})
	require.NoError(t, err, "the next invocation opens a new tab")
	defer next.Close()
	assert.Equal(t, "T2", next.TargetID())
}

// fakeBrowserProvider is a Provider of the fake browser at wsURL (with
// opts), closed at the test's end, and a context for the test's calls.
func fakeBrowserProvider(t *testing.T, wsURL string, opts ...Option) (*Provider, context.Context) {
	cfg := DefaultConfig()
	cfg.Host, cfg.Enabled = "127.0.0.1", true
	p := NewProvider(cfg, append([]Option{WithWebSocketURL(wsURL), WithUserDataDirs()}, opts...)...)
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return p, ctx
}
