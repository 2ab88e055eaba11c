package extension_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/tabs"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tab is a tab as the Vellum.* answers name it (WIRE-3): tabId a number in
// listTabs, a string in createTab and findTab.
type tab struct {
	ID     tabs.ID `json:"tabId"`
	URL    string  `json:"url"`
	Title  string  `json:"title"`
	Active bool    `json:"active"`
}

func TestExtensionPairsSubscribesAndDrivesDedicatedTab(t *testing.T) {
	s := startStack(t, stackOptions{})
	fx := startFixtures(t)
	ext := s.waitExtension(t)
	assert.Equal(t, auth.DefaultActor, ext.ActorPrincipalID, "the actor comes from the paired token")
	assert.True(t, ext.Has("host_browser"))
	require.NotEmpty(t, s.logs.matching("auth: client paired", "chrome-extension"))

	c := s.rt.Selector.Client(s.invocation("conv-1"))
	defer c.Close()

	var created tab
	send(t, c, "Vellum.createTab", map[string]any{"url": fx.page("first"), "active": false}, &created)
	assert.Equal(t, browserbackend.KindExtension, c.Kind(), "an auto invocation picks the extension")
	require.NotZero(t, created.ID)
	require.NotEmpty(t, s.logs.matching("candidate succeeded, backend is now sticky", "candidateKind=extension"))

	events, stop := c.Events("")
	defer stop()
	send(t, c, "Page.enable", nil, nil)
	send(t, c, "Page.navigate", map[string]any{"url": fx.page("second")}, nil)
	// The first page may still be loading: wait for the main frame to
	// navigate to the second page, then for the load event after it.
	for navigated, loaded := false, false; !loaded; {
		select {
		case ev := <-events:
			switch ev.Method {
			case "Page.frameNavigated":
				var p struct {
					Frame struct{ ParentID, URL string }
				}
				require.NoError(t, json.Unmarshal(ev.Params, &p))
				navigated = navigated || (p.Frame.ParentID == "" && strings.HasSuffix(p.Frame.URL, "/page/second"))
			case "Page.loadEventFired":
				loaded = navigated
			}
		case <-timeout():
			t.Fatal("no Page.frameNavigated + Page.loadEventFired were forwarded")
		}
	}

	var ev struct {
		Result struct{ Value string }
	}
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true}, &ev)
	assert.Equal(t, "second", ev.Result.Value, "commands run in the dedicated tab")

	var shot struct{ Data string }
	send(t, c, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))

	var list struct{ Tabs []tab }
	send(t, c, "Vellum.listTabs", map[string]any{}, &list)
	var other tabs.ID
	found := false
	for _, tb := range list.Tabs {
		if tb.ID == created.ID {
			found = true
			assert.Contains(t, tb.URL, "/page/second")
		} else {
			other = tb.ID
		}
	}
	require.True(t, found, "listTabs shows the dedicated tab: %+v", list.Tabs)
	require.NotZero(t, other, "the browser's start tab is listed too")

	var fnd tab
	send(t, c, "Vellum.findTab", map[string]any{"urlPattern": "*/page/second"}, &fnd)
	assert.Equal(t, created.ID, fnd.ID)

	send(t, c, "Vellum.selectTab", map[string]any{"tabId": other}, nil)
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "location.href", "returnByValue": true}, &ev)
	assert.Equal(t, "about:blank", ev.Result.Value, "selectTab moves later commands to that tab")
	send(t, c, "Vellum.selectTab", map[string]any{"tabId": created.ID}, nil)

	invalidated, stopInv := c.Events(browserbackend.MethodTargetDetached)
	defer stopInv()
	send(t, c, "Vellum.closeTab", map[string]any{"tabId": created.ID}, nil)
	select {
	case <-invalidated:
	case <-timeout():
		t.Fatal("closing the tab did not forward an invalidation")
	}
	send(t, c, "Vellum.listTabs", map[string]any{}, &list)
	for _, tb := range list.Tabs {
		assert.NotEqual(t, created.ID, tb.ID, "closeTab closed the tab")
	}

	// A CDP error is a protocol error, not a transport error.
	_, err = trySend(c, "Nope.nothing", nil)
	assert.ErrorIs(t, err, browserbackend.ErrProtocol)
	assert.ErrorIs(t, err, browserbackend.ErrMethodNotFound)
}

func TestCancelledRequestWhileExtensionRunsItGetsNoResultPost(t *testing.T) {
	s := startStack(t, stackOptions{})
	fx := startFixtures(t)
	s.waitExtension(t)
	c := s.rt.Selector.Client(s.invocation("conv-cancel"))
	defer c.Close()
	openPage(t, c, fx.page("cancel"))

	s.drainIDs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := sendAsync(ctx, c, "Runtime.evaluate", fx.gatedEval("cancel", 1))
	id := s.nextID(t)
	g := fx.gate("cancel")
	waitClosed(t, g.started, "the page to start the command") // the extension is running it
	cancel()
	r := waitResult(t, res)
	assert.ErrorIs(t, r.err, browserbackend.ErrAborted)

	close(g.release) // the command now completes inside the extension
	suppressed := s.workerEval(t, fmt.Sprintf("vellum.whenSuppressed(%q)", id))
	assert.JSONEq(t, "true", string(suppressed), "the extension dropped the result")
	assert.Empty(t, s.resultsFor(id), "no result was posted for the cancelled request")

	// The relay is still healthy: the next command is answered.
	var ev struct{ Result struct{ Value int } }
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "6*7", "returnByValue": true}, &ev)
	assert.Equal(t, 42, ev.Result.Value)
}

func TestResultFromAnotherClientOrActorIsForbiddenAndTheRightAnswerCompletes(t *testing.T) {
	s := startStack(t, stackOptions{})
	fx := startFixtures(t)
	ext := s.waitExtension(t)
	c := s.rt.Selector.Client(s.invocation("conv-forge"))
	defer c.Close()
	openPage(t, c, fx.page("forge"))

	s.drainIDs()
	res := sendAsync(context.Background(), c, "Runtime.evaluate", fx.gatedEval("forge", 7))
	id := s.nextID(t)
	g := fx.gate("forge")
	waitClosed(t, g.started, "the page to start the command")

	forged := map[string]any{"requestId": id, "content": `{"result":{"type":"number","value":666}}`, "isError": false}
	// Same actor, another client.
	other, err := s.rt.Auth.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "intruder"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, s.post(t, other.Token, "intruder", forged))
	// Another actor claiming the extension's client id.
	mallory, err := s.rt.Auth.Mint(auth.Grant{Actor: "mallory", InterfaceID: "chrome-extension"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, s.post(t, mallory.Token, ext.ClientID, forged))
	// Another actor's token bound to its own client cannot even name it.
	bound, err := s.rt.Auth.Mint(auth.Grant{Actor: "mallory", ClientID: "mallory-ext"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, s.post(t, bound.Token, ext.ClientID, forged))

	close(g.release)
	r := waitResult(t, res)
	require.NoError(t, r.err)
	var ev struct{ Result struct{ Value int } }
	require.NoError(t, json.Unmarshal(r.raw, &ev))
	assert.Equal(t, 7, ev.Result.Value, "the extension's own answer completed the request")
	posts := s.waitPosts(t, id, 4)
	require.Len(t, posts, 4)
	for _, p := range posts[:3] {
		assert.Equal(t, http.StatusForbidden, p.Status)
	}
	assert.Equal(t, http.StatusOK, posts[3].Status)
	require.NotNil(t, posts[3].DurationMs, "the extension reports its chrome.debugger time")
}

func TestBrowserKilledMidRequestFailsAtOnceAndNextInvocationFallsBack(t *testing.T) {
	// A second Chromium with a debugging port is the cdp-inspect fallback.
	spare := chromiumtest.Start(t)
	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled = true
	cfg.Host = "127.0.0.1"
	cfg.Port = spare.Port
	s := startStack(t, stackOptions{
		fallbacks: []browserbackend.Provider{cdpinspect.NewProvider(cfg)},
		// Far beyond the test's own step timeout: a timeout is not what ends
		// the in-flight request.
		timeout: 10 * time.Minute,
	})
	fx := startFixtures(t)
	s.waitExtension(t)

	c := s.rt.Selector.Client(s.invocation("conv-kill"))
	defer c.Close()
	openPage(t, c, fx.page("kill"))
	require.Equal(t, browserbackend.KindExtension, c.Kind())

	res := sendAsync(context.Background(), c, "Runtime.evaluate", fx.gatedEval("kill", 1))
	waitClosed(t, fx.gate("kill").started, "the page to start the command")
	s.browser.Kill()
	r := waitResult(t, res)
	require.Error(t, r.err)
	assert.ErrorIs(t, r.err, browserbackend.ErrTransport, "the in-flight request fails with a transport error")
	assert.NotErrorIs(t, r.err, browserbackend.ErrTimeout)
	assert.Equal(t, browserbackend.KindExtension, c.Kind(), "a sticky backend's error is returned as is")

	next := s.rt.Selector.Client(s.invocation("conv-kill"))
	defer next.Close()
	var ev struct{ Result struct{ Value int } }
	send(t, next, "Runtime.evaluate", map[string]any{"expression": "20+22", "returnByValue": true}, &ev)
	assert.Equal(t, 42, ev.Result.Value)
	assert.Equal(t, browserbackend.KindCDPInspect, next.Kind(), "the next invocation falls back to cdp-inspect")
	// The selection records (SEL-11): the conversation's remembered
	// extension is forgotten, the list is built without it, and cdp-inspect
	// serves and sticks.
	assert.NotEmpty(t, s.logs.matching("forgot the conversation's remembered backend", "candidateKind=extension",
		"conversationId=conv-kill", "module=cdp-factory"))
	built := s.logs.matching("candidate list built", "conversationId=conv-kill", "method=Runtime.evaluate")
	require.Len(t, built, 1)
	assert.Contains(t, built[0], "kind:cdp-inspect")
	assert.NotContains(t, built[0], "kind:extension")
	assert.NotEmpty(t, s.logs.matching("candidate succeeded, backend is now sticky", "candidateKind=cdp-inspect",
		"conversationId=conv-kill", "module=cdp-factory"))
	skipped := next.Attempts()
	require.NotEmpty(t, skipped)
	assert.Equal(t, browserbackend.KindExtension, skipped[0].Kind, "the attempt list records the extension")
	assert.Equal(t, browserbackend.StageCandidateSelection, skipped[0].Stage)
}

func TestCommandSucceedsAfter40sIdleWithNoDebuggerAttached(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 40 s of real time (the MV3 idle limit is 30 s); skipped with -short")
	}
	s := startStack(t, stackOptions{})
	fx := startFixtures(t)
	s.waitExtension(t)

	c := s.rt.Selector.Client(s.invocation("conv-idle"))
	created := openPage(t, c, fx.page("idle"))
	send(t, c, "Vellum.detach", map[string]any{"tabId": created.ID}, nil)
	c.Close()

	// The behaviour under test is the passage of time itself: Chrome kills an
	// idle MV3 worker without a debugger after 30 s. Nothing is attached to
	// the worker and no command is sent while we wait.
	<-time.After(40 * time.Second)

	c2 := s.rt.Selector.Client(s.invocation("conv-idle"))
	defer c2.Close()
	var ev struct{ Result struct{ Value string } }
	send(t, c2, "Runtime.evaluate", map[string]any{"expression": "document.title", "returnByValue": true}, &ev)
	assert.Equal(t, "idle", ev.Result.Value)
	assert.Equal(t, browserbackend.KindExtension, c2.Kind())
	assert.Zero(t, s.unreg.Load(), "the keepalive kept the worker and its stream up the whole time")
}

func TestPopupShowsHealthAndPauseAndConnectWork(t *testing.T) {
	s := startStack(t, stackOptions{})
	ext := s.waitExtension(t)
	popup := s.openExtPage(t, "popup.html")
	popup.waitText(t, "state", "Connected")
	assert.JSONEq(t, fmt.Sprintf("%q", s.srv.URL), string(popup.eval(t, "document.getElementById('server').value")))

	popup.eval(t, "document.getElementById('pause').click()")
	popup.waitText(t, "state", "Paused")
	s.waitGone(t, ext.ClientID)

	popup.eval(t, "document.getElementById('connect').click()")
	popup.waitText(t, "state", "Connected")
	again := s.waitExtension(t)
	assert.Equal(t, ext.ClientID, again.ClientID, "the install keeps its client id")
}

func TestRefusedPairingShowsAuthRequiredWithoutRetryLoop(t *testing.T) {
	s := startStack(t, stackOptions{origins: []string{"chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}})
	popup := s.openExtPage(t, "popup.html")
	popup.waitText(t, "state", "Action required: pairing refused")
	denials := s.logs.matching("auth: request denied", "code=origin_not_allowed", "route=/v1/pair")
	assert.Len(t, denials, 1, "one refused pairing, no silent retries")
	assert.Empty(t, s.rt.Hub.Roster())
}

func TestReconnectRefreshesAShortLivedTokenWithTheDeviceBoundRefreshToken(t *testing.T) {
	// Tokens that live less than the extension's renewal margin (5 min) are
	// renewed at every reconnect.
	s := startStack(t, stackOptions{tokenTTL: time.Minute})
	ext := s.waitExtension(t)
	require.Len(t, s.logs.matching("auth: client paired", "interfaceId=chrome-extension"), 1)

	// Drop the stream from the server side once the extension reads it (an
	// abort before the response headers makes Chrome resend the request on
	// its own, which is not what this test is about); the extension
	// reconnects.
	s.workerEval(t, "vellum.whenConnected(1)")
	gone := s.rt.Hub.Gone(ext.ClientID)
	require.True(t, s.rt.Hub.Unregister(ext.ClientID))
	waitClosed(t, gone, "the registration to end")
	again := s.waitExtension(t)
	assert.Equal(t, ext.ClientID, again.ClientID)
	s.workerEval(t, "vellum.whenConnected(2)")
	assert.NotEmpty(t, s.logs.matching("auth: token refreshed", "clientId="+ext.ClientID))
	var stats struct{ Pairings, Refreshes, Subscribes, SocketStreams int }
	require.NoError(t, json.Unmarshal(s.workerEval(t, "vellum.stats"), &stats))
	assert.Equal(t, 1, stats.Pairings)
	assert.Equal(t, 1, stats.Refreshes)
	assert.Equal(t, 2, stats.Subscribes+stats.SocketStreams, "two connections (event streams or subscribed sockets)")
	assert.Len(t, s.logs.matching("auth: client paired"), 1, "no second pairing: the refresh token was used")

	c := s.rt.Selector.Client(s.invocation("conv-refresh"))
	defer c.Close()
	var ev struct{ Result struct{ Value int } }
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "2+3", "returnByValue": true}, &ev)
	assert.Equal(t, 5, ev.Result.Value)
}

func TestPopupShowsReconnectingWhenTheServerGoesAway(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.waitExtension(t)
	popup := s.openExtPage(t, "popup.html")
	popup.waitText(t, "state", "Connected")
	s.rt.Close()  // ends the stream
	s.srv.Close() // and nothing answers any more
	popup.waitText(t, "state", "Reconnecting…")
}

func TestFlatChildSessionsRunCommandsAndAreInvalidatedWithTheirTab(t *testing.T) {
	s := startStack(t, stackOptions{})
	fx := startFixtures(t)
	s.waitExtension(t)
	c := s.rt.Selector.Client(s.invocation("conv-frames"))
	defer c.Close()

	// localhost and 127.0.0.1 are different sites, so the frame is an
	// out-of-process iframe with a target of its own.
	child := strings.Replace(fx.page("child"), "127.0.0.1", "localhost", 1)
	created := openPage(t, c, fx.page("parent")+"?frame="+url.QueryEscape(child))

	attached, stop := c.Events("Target.attachedToTarget")
	defer stop()
	send(t, c, "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}, nil)
	var sessionID string
	for sessionID == "" {
		select {
		case ev := <-attached:
			var p struct {
				SessionID  string                `json:"sessionId"`
				TargetInfo struct{ Type string } `json:"targetInfo"`
			}
			require.NoError(t, json.Unmarshal(ev.Params, &p))
			if p.TargetInfo.Type == "iframe" {
				sessionID = p.SessionID
			}
		case <-timeout():
			t.Fatal("no iframe target was auto-attached")
		}
	}

	cmd := func(expr string) (json.RawMessage, error) {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		p, _ := json.Marshal(map[string]any{"expression": expr, "returnByValue": true})
		return c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: p, SessionID: sessionID})
	}
	raw, err := cmd("location.href")
	require.NoError(t, err)
	var ev struct{ Result struct{ Value string } }
	require.NoError(t, json.Unmarshal(raw, &ev))
	assert.Equal(t, child, ev.Result.Value, "the command ran in the child session")

	invalidated, stopInv := c.Events(browserbackend.MethodTargetDetached)
	defer stopInv()
	send(t, c, "Vellum.closeTab", map[string]any{"tabId": created.ID}, nil)
	for gone := false; !gone; {
		select {
		case ev := <-invalidated:
			gone = ev.SessionID == sessionID || strings.Contains(string(ev.Params), sessionID)
		case <-timeout():
			t.Fatal("the child session was not invalidated with its tab")
		}
	}
	_, err = cmd("1")
	assert.ErrorIs(t, err, browserbackend.ErrSessionNotFound, "a command bound to the closed session fails clearly")
}
