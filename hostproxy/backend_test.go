package hostproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browserchain/browserchain/hostproxy/tabs"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// answer posts content for the next request client c receives.
func answer(t *testing.T, p *Proxy, c *fakeClient, content string, isError bool) map[string]any {
	t.Helper()
	msg := c.next(t)
	rec := postResult(p, c.info.ClientID, c.info.ActorPrincipalID,
		ResultBody{RequestID: msg["requestId"].(string), Content: content, IsError: isError})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return msg
}

// buildAnswering runs c's Build while the extension client ext answers the
// tab it pins (Vellum.createTab, then Vellum.attach), and returns the
// backend.
func buildAnswering(t *testing.T, p *Proxy, ext *fakeClient, c browserbackend.Candidate) browserbackend.ScopedClient {
	t.Helper()
	type built struct {
		sc  browserbackend.ScopedClient
		err error
	}
	done := make(chan built, 1)
	go func() {
		sc, err := c.Build(context.Background())
		done <- built{sc, err}
	}()
	assert.Equal(t, wire.MethodCreateTab, answer(t, p, ext, `{"tabId":7}`, false)["cdpMethod"])
	assert.Equal(t, wire.MethodAttach, answer(t, p, ext, `{}`, false)["cdpMethod"])
	b := <-done
	require.NoError(t, b.err)
	assert.Equal(t, browserbackend.Tab{ID: "7", Owned: true}, b.sc.(browserbackend.TabScoped).Tab())
	return b.sc
}

func sendAsync(b browserbackend.ScopedClient, cmd browserbackend.Command) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := b.Send(context.Background(), cmd)
		done <- outcome{res, err}
	}()
	return done
}

func TestHostBridgeBackend_GoesToDesktopOnlyAndNeverTargetsAClient(t *testing.T) {
	h := newFakeHub()
	mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	b := p.NewHostBridgeBackend(browserbackend.Invocation{ConversationID: "c1", ActorPrincipalID: "alice", TargetClientID: "ext"}, BackendOptions{})
	defer b.Close()

	// An extension connecting later does not steal the bridge's commands.
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0.Add(time.Hour))
	done := sendAsync(b, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)})
	msg := answer(t, p, mac, `{"result":{"value":1}}`, false)
	out := <-done
	require.NoError(t, out.err)
	assert.Equal(t, "Runtime.evaluate", msg["cdpMethod"])
	assert.Equal(t, "mac", b.ClientID())
	ext.empty(t)
	assert.Equal(t, browserbackend.KindHostBridge, b.Kind())
}

func TestHostBridgeBackend_TabOperationsNotSupported(t *testing.T) {
	h := newFakeHub()
	mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	b := p.NewHostBridgeBackend(browserbackend.Invocation{ActorPrincipalID: "alice"}, BackendOptions{})
	defer b.Close()
	_, err := tabs.List(context.Background(), b)
	assert.ErrorIs(t, err, browserbackend.ErrNotSupported)
	assert.ErrorIs(t, err, browserbackend.ErrPolicy)
	_, err = b.Send(context.Background(), browserbackend.Command{Method: wire.MethodAttach})
	assert.ErrorIs(t, err, browserbackend.ErrNotSupported)
	mac.empty(t)
}

func TestExtensionBackend_TabOperationsAndClassification(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	b := p.NewExtensionBackend(browserbackend.Invocation{ActorPrincipalID: "alice"}, BackendOptions{})
	defer b.Close()

	type tabsOut struct {
		tabs []tabs.Tab
		err  error
	}
	got := make(chan tabsOut, 1)
	go func() {
		list, err := tabs.List(context.Background(), b)
		got <- tabsOut{list, err}
	}()
	msg := answer(t, p, ext, `{"tabs":[{"tabId":7,"windowId":1,"url":"https://a.test/","title":"A","active":true,"pinned":false}]}`, false)
	assert.Equal(t, wire.MethodListTabs, msg["cdpMethod"])
	o := <-got
	require.NoError(t, o.err)
	assert.Equal(t, []tabs.Tab{{ID: 7, WindowID: 1, URL: "https://a.test/", Title: "A", Active: true}}, o.tabs)

	// The real shapes (WIRE-3): createTab and findTab name the tab with a
	// string, which compares equal to listTabs' number.
	created := make(chan tabs.Tab, 1)
	go func() { tab, _ := tabs.Create(context.Background(), b, "about:blank", true); created <- tab }()
	answer(t, p, ext, `{"tabId":"7","clientId":"ext"}`, false)
	assert.Equal(t, o.tabs[0].ID, (<-created).ID)
	found := make(chan tabs.Tab, 1)
	go func() { tab, _, _ := tabs.Find(context.Background(), b, "https://a.test/*"); found <- tab }()
	msg = answer(t, p, ext, `{"tabId":"7","url":"https://a.test/","title":"A"}`, false)
	assert.Equal(t, map[string]any{"urlPattern": "https://a.test/*"}, msg["cdpParams"])
	assert.Equal(t, tabs.Tab{ID: 7, URL: "https://a.test/", Title: "A"}, <-found)
	missing := make(chan bool, 1)
	go func() {
		_, ok, err := tabs.Find(context.Background(), b, "https://b.test/*")
		missing <- ok || err != nil
	}()
	answer(t, p, ext, `{"code":"target_not_found","message":"no tab matches"}`, true)
	assert.False(t, <-missing, "not found is found=false, no error")
	closed := make(chan error, 1)
	go func() { closed <- tabs.Close(context.Background(), b, 7) }()
	msg = answer(t, p, ext, `{"closed":true,"tabId":7,"clientId":"ext"}`, false)
	assert.Equal(t, map[string]any{"tabId": float64(7)}, msg["cdpParams"])
	assert.NoError(t, <-closed)

	done := sendAsync(b, browserbackend.Command{Method: "Nope.nope"})
	answer(t, p, ext, `{"code":-32601,"message":"'Nope.nope' wasn't found"}`, true)
	out := <-done
	assert.ErrorIs(t, out.err, browserbackend.ErrProtocol)
	assert.ErrorIs(t, out.err, browserbackend.ErrMethodNotFound)

	done = sendAsync(b, browserbackend.Command{Method: "Page.navigate"})
	answer(t, p, ext, `{"code":"transport_error","message":"debugger detached"}`, true)
	out = <-done
	assert.ErrorIs(t, out.err, browserbackend.ErrTransport)
	var e *browserbackend.Error
	require.ErrorAs(t, out.err, &e)
	assert.Equal(t, browserbackend.KindExtension, e.Backend)
}

func TestBackend_EventsAndInvalidationReachSubscribers(t *testing.T) {
	h := newFakeHub()
	mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	b := p.NewHostBridgeBackend(browserbackend.Invocation{ActorPrincipalID: "alice"}, BackendOptions{})
	defer b.Close()
	loads, stop := b.Subscribe("Page.loadEventFired")
	defer stop()
	detached, stop2 := b.Subscribe(browserbackend.MethodTargetDetached)
	defer stop2()

	done := sendAsync(b, browserbackend.Command{Method: "Page.enable"})
	answer(t, p, mac, `{}`, false)
	require.NoError(t, (<-done).err)

	rec := post(p.eventHandler(), "mac", "alice", []byte(`{"method":"Page.loadEventFired","params":{"timestamp":1.5}}`))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	ev := <-loads
	assert.Equal(t, "Page.loadEventFired", ev.Method)
	assert.JSONEq(t, `{"timestamp":1.5}`, string(ev.Params))

	rec = post(p.invalidationHandler(), "mac", "alice", []byte(`{"sessionId":"S9","targetId":"T9","reason":"tab_closed"}`))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	ev = <-detached
	assert.Equal(t, "S9", ev.SessionID)
	assert.JSONEq(t, `{"sessionId":"S9","targetId":"T9","reason":"tab_closed"}`, string(ev.Params))

	// Rejections.
	assert.Equal(t, http.StatusBadRequest, post(p.eventHandler(), "", "alice", []byte(`{"method":"a"}`)).Code)
	assert.Equal(t, http.StatusNotFound, post(p.eventHandler(), "ghost", "alice", []byte(`{"method":"a"}`)).Code)
	assert.Equal(t, http.StatusForbidden, post(p.eventHandler(), "mac", "mallory", []byte(`{"method":"a"}`)).Code)
	assert.Equal(t, http.StatusBadRequest, post(p.eventHandler(), "mac", "alice", []byte(`{"params":{}}`)).Code)
	assert.Equal(t, http.StatusBadRequest, post(p.invalidationHandler(), "mac", "alice", []byte(`{"reason":"x"}`)).Code)
	select {
	case ev := <-loads:
		t.Fatalf("rejected post delivered %v", ev)
	default:
	}
}

func TestBackend_CloseFailsInFlightWithClosed(t *testing.T) {
	h := newFakeHub()
	mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	b := p.NewHostBridgeBackend(browserbackend.Invocation{ActorPrincipalID: "alice"}, BackendOptions{})
	events, _ := b.Subscribe("")
	done := sendAsync(b, browserbackend.Command{Method: "Page.navigate"})
	req := mac.next(t)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	out := <-done
	assert.ErrorIs(t, out.err, browserbackend.ErrClosed)
	assert.Equal(t, map[string]any{"type": wire.TypeHostBrowserCancel, "requestId": req["requestId"]}, mac.next(t))
	_, open := <-events
	assert.False(t, open, "subscriptions close with the backend")
	_, err := b.Send(context.Background(), browserbackend.Command{Method: "Page.navigate"})
	assert.ErrorIs(t, err, browserbackend.ErrClosed)
}

func TestExtensionProvider_ProposesForActorsExtensionOnly(t *testing.T) {
	h := newFakeHub()
	p := newTestProxy(h)
	prov := p.ExtensionProvider(ProviderOptions{})
	env := browserbackend.Env{Cooldowns: &browserbackend.Cooldowns{}}
	inv := browserbackend.Invocation{ActorPrincipalID: "alice", InterfaceID: "macos"}

	_, err := prov.Propose(inv, env)
	assert.ErrorIs(t, err, browserbackend.ErrSkip)

	h.add("ext-bob", wire.InterfaceChromeExtension, "bob", t0)
	h.add("mac-alice", wire.InterfaceMacOS, "alice", t0)
	_, err = prov.Propose(inv, env)
	assert.ErrorIs(t, err, browserbackend.ErrSkip, "bob's extension and alice's bridge do not count")

	ext := h.add("ext-alice", wire.InterfaceChromeExtension, "alice", t0)
	c, err := prov.Propose(inv, env)
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindExtension, c.Kind)
	assert.Empty(t, c.CooldownKey, "the extension candidate is never cooled down")
	assert.NoError(t, c.Probe(context.Background()))
	sc := buildAnswering(t, p, ext, c)
	require.NoError(t, sc.Close())
}

func TestExtensionProvider_TargetClient(t *testing.T) {
	h := newFakeHub()
	p := newTestProxy(h)
	prov := p.ExtensionProvider(ProviderOptions{})
	env := browserbackend.Env{Pinned: true, Cooldowns: &browserbackend.Cooldowns{}}
	h.add("ext-1", wire.InterfaceChromeExtension, "alice", t0.Add(time.Hour))
	h.add("ext-2", wire.InterfaceChromeExtension, "alice", t0)

	inv := browserbackend.Invocation{ActorPrincipalID: "alice", TargetClientID: "ext-2"}
	c, err := prov.Propose(inv, env)
	require.NoError(t, err)
	assert.Contains(t, c.Reason, "ext-2")

	inv.TargetClientID = "ext-9"
	_, err = prov.Propose(inv, env)
	require.Error(t, err)
	assert.NotErrorIs(t, err, browserbackend.ErrSkip, "a missing target client is a selection error, not a skip")
	assert.ErrorIs(t, err, &browserbackend.Error{Code: browserbackend.CodeTargetUnavailable})

	// The backend sends to the target even though ext-1 is more recent.
	ext2 := h.clients["ext-2"]
	inv.TargetClientID = "ext-2"
	c, err = prov.Propose(inv, env)
	require.NoError(t, err)
	sc := buildAnswering(t, p, ext2, c)
	defer sc.Close()
	done := sendAsync(sc, browserbackend.Command{Method: "Page.enable"})
	assert.Equal(t, "7", answer(t, p, ext2, `{}`, false)["cdpSessionId"], "page commands run in the pinned tab")
	require.NoError(t, (<-done).err)
	h.clients["ext-1"].empty(t)
}

func TestHostBridgeProvider_Rules(t *testing.T) {
	h := newFakeHub()
	p := newTestProxy(h)
	prov := p.HostBridgeProvider(ProviderOptions{})
	cool := &browserbackend.Cooldowns{}
	env := browserbackend.Env{Cooldowns: cool}
	alice := browserbackend.Invocation{ActorPrincipalID: "alice", InterfaceID: "macos"}
	bob := browserbackend.Invocation{ActorPrincipalID: "bob", InterfaceID: "macos"}

	skipCode := func(err error) string {
		var s *browserbackend.SkipError
		require.ErrorAs(t, err, &s)
		return s.Code
	}
	_, err := prov.Propose(alice, env)
	assert.Equal(t, browserbackend.CodeNoClient, skipCode(err))

	h.add("mac-alice", wire.InterfaceMacOS, "alice", t0)
	h.add("mac-bob", wire.InterfaceMacOS, "bob", t0)
	c, err := prov.Propose(alice, env)
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindHostBridge, c.Kind)
	assert.Equal(t, HostBridgeCooldownKey("alice"), c.CooldownKey)
	assert.Equal(t, DefaultHostBridgeCooldown, c.CooldownFor)

	cool.Record(HostBridgeCooldownKey("alice"), time.Minute)
	_, err = prov.Propose(alice, env)
	assert.Equal(t, browserbackend.CodeCooldown, skipCode(err))
	_, err = prov.Propose(bob, env)
	assert.NoError(t, err, "alice's cooldown does not affect bob")

	h.add("ext-bob", wire.InterfaceChromeExtension, "bob", t0)
	_, err = prov.Propose(bob, env)
	assert.Equal(t, CodeExtensionConnected, skipCode(err), "never both extension and host-bridge")

	bob.TargetClientID = "ext-bob"
	_, err = prov.Propose(bob, env)
	assert.Equal(t, CodeTargetClient, skipCode(err))

	h2 := newFakeHub()
	h2.add("mac", wire.InterfaceMacOS, "", t0)
	prov = newTestProxy(h2).HostBridgeProvider(ProviderOptions{HostBridgeCooldown: 5 * time.Second})
	c, err = prov.Propose(browserbackend.Invocation{}, browserbackend.Env{Cooldowns: &browserbackend.Cooldowns{}})
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, c.CooldownFor)
	assert.Equal(t, HostBridgeCooldownKey(""), c.CooldownKey)
}

func TestProviders_ChangedFollowsRoster(t *testing.T) {
	h := newFakeHub()
	p := newTestProxy(h)
	var w browserbackend.Watcher = p.ExtensionProvider(ProviderOptions{})
	ch := w.Changed()
	select {
	case <-ch:
		t.Fatal("changed before any roster change")
	default:
	}
	h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	<-ch // closed by the registration
}

func TestHostBridgeCooldownRecordedWhenTheBridgeGoesAwayOnAStickyInvocation(t *testing.T) {
	h := newFakeHub()
	mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	cool := &browserbackend.Cooldowns{}
	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{p.HostBridgeProvider(ProviderOptions{})},
		Cooldowns: cool, Logger: quietLogger(),
	})
	client := sel.Client(browserbackend.Invocation{ActorPrincipalID: "alice", InterfaceID: wire.InterfaceMacOS})
	defer client.Close()
	send := func(cmd browserbackend.Command) <-chan outcome {
		done := make(chan outcome, 1)
		go func() {
			res, err := client.Send(context.Background(), cmd)
			done <- outcome{res, err}
		}()
		return done
	}
	key := HostBridgeCooldownKey("alice")

	done := send(browserbackend.Command{Method: "Page.enable"})
	answer(t, p, mac, `{}`, false)
	require.NoError(t, (<-done).err)
	require.Equal(t, browserbackend.KindHostBridge, client.Kind())

	// A tab that went away is not the bridge's fault.
	done = send(browserbackend.Command{Method: "Runtime.evaluate", SessionID: "S1"})
	answer(t, p, mac, `{"code":"cdp_session_not_found","message":"gone"}`, true)
	assert.ErrorIs(t, (<-done).err, browserbackend.ErrSessionNotFound)
	assert.False(t, cool.Active(key))

	// The bridge disappears mid-command on the sticky backend: the selector
	// records the actor's cooldown, and only that actor's.
	done = send(browserbackend.Command{Method: "Runtime.evaluate"})
	mac.next(t)
	h.remove("mac")
	assert.ErrorIs(t, (<-done).err, browserbackend.ErrTransport)
	assert.True(t, cool.Active(key), "the actor's host-bridge cooldown is recorded")
	assert.False(t, cool.Active(HostBridgeCooldownKey("bob")))
}

// A desktop bridge that answers with its own deadline (code timeout) gives
// a transport error with that code (PXY-6), carrying the client's
// diagnostics; NoReplayPolicy, which never replays a dispatched command (SEL-5),
// keeps it on the bridge.
func TestHostBridgeTimeoutAnswerIsTransportWithTheClientsDiagnostics(t *testing.T) {
	h := newFakeHub()
	mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	var builds atomic.Int32
	next := browserbackend.ProviderFunc(browserbackend.Descriptor{Kind: browserbackend.KindLocal},
		func(browserbackend.Invocation, browserbackend.Env) (browserbackend.Candidate, error) {
			return browserbackend.Candidate{Kind: browserbackend.KindLocal, Reason: "next", Build: func(context.Context) (browserbackend.ScopedClient, error) {
				builds.Add(1)
				return nil, browserbackend.TransportError(browserbackend.CodeUnreachable, "the next candidate", nil)
			}}, nil
		})
	sel := browserbackend.NewSelector(browserbackend.Options{
		Providers: []browserbackend.Provider{p.HostBridgeProvider(ProviderOptions{}), next}, Logger: quietLogger(),
		Policy: browserbackend.NoReplayPolicy,
	})
	send := func() <-chan outcome {
		client := sel.Client(browserbackend.Invocation{ActorPrincipalID: "alice", InterfaceID: wire.InterfaceMacOS})
		t.Cleanup(func() { client.Close() })
		done := make(chan outcome, 1)
		go func() {
			res, err := client.Send(context.Background(), browserbackend.Command{Method: "Input.dispatchKeyEvent"})
			done <- outcome{res, err}
		}()
		return done
	}

	done := send()
	answer(t, p, mac, `{"code":"timeout","message":"deadline passed before an answer"}`, true)
	err := (<-done).err
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, browserbackend.ClassTransport, e.Class)
	assert.Equal(t, browserbackend.CodeTimeout, e.Code)
	assert.True(t, e.Dispatched, "the bridge may have sent it")
	assert.Equal(t, browserbackend.KindHostBridge, e.Backend)
	assert.Zero(t, builds.Load(), "the policy keeps a dispatched command where it was")
	require.NotNil(t, e.Diagnostics, "a timeout says what the client was doing")
	assert.Equal(t, 1, e.Diagnostics.InFlight)
	assert.Contains(t, e.Error(), "host-bridge Input.dispatchKeyEvent transport/timeout: deadline passed before an answer (1 in flight")
}

// A failed tab probe is the command's error, not dispatched, said once: a
// timeout says the command was never sent and keeps the probe's
// diagnostics; another failure names the probe and its message.
func TestProbeFailedSaysTheCommandWasNotSent(t *testing.T) {
	d := &browserbackend.Diagnostics{InFlight: 1, OldestInFlight: time.Second, SinceLastAnswer: time.Second, Uptime: time.Minute}
	timeout := &browserbackend.Error{Class: browserbackend.ClassTimeout, Code: browserbackend.CodeTimeout, Method: "Target.getTargetInfo",
		Backend: browserbackend.KindHostBridge, Dispatched: true, Diagnostics: d, Err: context.DeadlineExceeded}
	err := probeFailed("Runtime.evaluate", timeout)
	assert.Equal(t, "browserbackend: host-bridge Runtime.evaluate timeout: deadline passed before the command was sent, waiting for Target.getTargetInfo (1 in flight, oldest 1s, last answer 1s ago, up 1m0s): context deadline exceeded", err.Error())
	var e *browserbackend.Error
	require.ErrorAs(t, err, &e)
	assert.False(t, e.Dispatched)

	gone := &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeTransportError, Backend: browserbackend.KindHostBridge,
		Dispatched: true, Message: "client went away"}
	assert.Equal(t, "browserbackend: host-bridge Runtime.evaluate transport/transport_error: before the command, Target.getTargetInfo: client went away",
		probeFailed("Runtime.evaluate", gone).Error())
}
