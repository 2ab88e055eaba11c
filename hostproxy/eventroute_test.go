package hostproxy

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// routeConv is one conversation's backend on the shared client, with a
// subscription to all its events.
type routeConv struct {
	b      *ExtensionBackend
	events <-chan browserbackend.Event
}

func newRouteConv(t *testing.T, p *Proxy, conv string) *routeConv {
	b := p.NewExtensionBackend(browserbackend.Invocation{ConversationID: conv, ActorPrincipalID: "alice"}, BackendOptions{})
	t.Cleanup(func() { b.Close() })
	ch, stop := b.Subscribe("")
	t.Cleanup(stop)
	return &routeConv{b: b, events: ch}
}

// next returns the next event delivered to c, or fails when none is queued
// (events are delivered synchronously by the route).
func (c *routeConv) next(t *testing.T) browserbackend.Event {
	t.Helper()
	select {
	case ev := <-c.events:
		return ev
	default:
		t.Fatal("no event delivered")
		return browserbackend.Event{}
	}
}

func (c *routeConv) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-c.events:
		t.Fatalf("unexpected event %s %s", ev.Method, ev.Params)
	default:
	}
}

func postEvent(t *testing.T, p *Proxy, body string) {
	t.Helper()
	rec := post(p.eventHandler(), "ext", "alice", []byte(body))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}

// TestEventRouting_TwoConversationsOnOneClient (WIRE-4): events naming a tab,
// and events whose frame, request or execution context is known to belong to
// a tab, reach only the conversation whose commands name that tab; events
// that cannot be attributed reach nobody while two conversations listen, and
// the one conversation when it is alone.
func TestEventRouting_TwoConversationsOnOneClient(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	a, b := newRouteConv(t, p, "conv-A"), newRouteConv(t, p, "conv-B")

	// A's navigate in tab 1 answers its frame; B's tab 2 is named by target.
	done := sendAsync(a.b, browserbackend.Command{Method: "Page.navigate", Params: json.RawMessage(`{"url":"https://a.test/"}`), SessionID: "1"})
	answer(t, p, ext, `{"frameId":"FRAME-A","loaderId":"L1"}`, false)
	require.NoError(t, (<-done).err)
	done = sendAsync(b.b, browserbackend.Command{Method: "Page.enable", SessionID: "TARGET-B"})
	answer(t, p, ext, `{}`, false)
	require.NoError(t, (<-done).err)

	// The reference extension names the tab.
	postEvent(t, p, `{"type":"host_browser_event","method":"Page.loadEventFired","params":{"timestamp":1},"tabId":1}`)
	ev := a.next(t)
	assert.Equal(t, "1", ev.SessionID, "a tab-level event carries its tab id as session")
	b.none(t)

	// The real extension names nothing: the frame decides.
	postEvent(t, p, `{"type":"host_browser_event","method":"Page.lifecycleEvent","params":{"frameId":"FRAME-A","loaderId":"L1","name":"load"}}`)
	a.next(t)
	b.none(t)
	postEvent(t, p, `{"type":"host_browser_event","method":"Page.frameStoppedLoading","params":{"frameId":"TARGET-B"}}`)
	b.next(t)
	a.none(t)

	// A child frame, a request and an execution context learned from B's
	// events attribute later events that name only them.
	postEvent(t, p, `{"method":"Page.frameAttached","params":{"frameId":"CHILD-B","parentFrameId":"TARGET-B"}}`)
	b.next(t)
	postEvent(t, p, `{"method":"Network.requestWillBeSent","params":{"requestId":"R7","frameId":"CHILD-B"}}`)
	b.next(t)
	postEvent(t, p, `{"method":"Network.loadingFinished","params":{"requestId":"R7"}}`)
	b.next(t)
	postEvent(t, p, `{"method":"Runtime.executionContextCreated","params":{"context":{"id":3,"auxData":{"frameId":"FRAME-A"}}}}`)
	a.next(t)
	postEvent(t, p, `{"method":"Runtime.consoleAPICalled","params":{"type":"log","executionContextId":3}}`)
	a.next(t)
	b.none(t)

	// A context id seen in both tabs is ambiguous: its events go nowhere.
	postEvent(t, p, `{"method":"Runtime.executionContextCreated","params":{"context":{"id":3,"auxData":{"frameId":"TARGET-B"}}}}`)
	b.next(t)
	before := p.Stats().EventsUnattributed
	postEvent(t, p, `{"method":"Runtime.consoleAPICalled","params":{"type":"log","executionContextId":3}}`)
	a.none(t)
	b.none(t)
	assert.Equal(t, before+1, p.Stats().EventsUnattributed)

	// Nothing names a tab: withheld while two conversations listen ...
	postEvent(t, p, `{"type":"host_browser_event","method":"Page.domContentEventFired","params":{"timestamp":2}}`)
	a.none(t)
	b.none(t)
	assert.Equal(t, before+2, p.Stats().EventsUnattributed)

	// ... and delivered to the sole conversation left.
	require.NoError(t, b.b.Close())
	postEvent(t, p, `{"type":"host_browser_event","method":"Page.domContentEventFired","params":{"timestamp":3}}`)
	a.next(t)
	// An event known to be B's tab still never reaches A.
	postEvent(t, p, `{"method":"Page.frameStoppedLoading","params":{"frameId":"TARGET-B"}}`)
	a.none(t)
}

// TestEventRouting_InvalidationOfTheRealExtensionReachesTheTabsOwner: the
// real extension's invalidation names the tab in targetId (decimal digits).
func TestEventRouting_InvalidationOfTheRealExtensionReachesTheTabsOwner(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	a, b := newRouteConv(t, p, "conv-A"), newRouteConv(t, p, "conv-B")
	for conv, tab := range map[*routeConv]string{a: "4", b: "5"} {
		done := sendAsync(conv.b, browserbackend.Command{Method: "Page.enable", SessionID: tab})
		answer(t, p, ext, `{}`, false)
		require.NoError(t, (<-done).err)
	}
	rec := post(p.invalidationHandler(), "", "alice",
		[]byte(`{"type":"host_browser_session_invalidated","targetId":"5","reason":"tab_closed","clientId":"ext"}`))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	ev := b.next(t)
	assert.Equal(t, browserbackend.MethodTargetDetached, ev.Method)
	a.none(t)
}

// TestEventRouting_ProbesTheTargetOfATabOnAClientWhoseEventsNameNone: once a
// client has posted an event that names no tab, a backend's first command
// naming a tab is preceded by Target.getTargetInfo on that tab, whose target
// id (the tab's main frame id) then attributes the tab's events.
func TestEventRouting_ProbesTheTargetOfATabOnAClientWhoseEventsNameNone(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	a, b := newRouteConv(t, p, "conv-A"), newRouteConv(t, p, "conv-B")
	done := sendAsync(b.b, browserbackend.Command{Method: "Page.enable", SessionID: "2"})
	msg := answer(t, p, ext, `{}`, false)
	assert.Equal(t, "Page.enable", msg["cdpMethod"], "no probe before the client's events are seen")
	require.NoError(t, (<-done).err)
	postEvent(t, p, `{"type":"host_browser_event","method":"Page.frameResized","params":{}}`)
	b.next(t) // B is the client's only bound backend yet

	done = sendAsync(a.b, browserbackend.Command{Method: "Page.enable", SessionID: "1"})
	msg = answer(t, p, ext, `{"targetInfo":{"targetId":"T-ONE","type":"page"}}`, false)
	assert.Equal(t, "Target.getTargetInfo", msg["cdpMethod"])
	assert.Equal(t, "1", msg["cdpSessionId"])
	msg = answer(t, p, ext, `{}`, false)
	assert.Equal(t, "Page.enable", msg["cdpMethod"])
	require.NoError(t, (<-done).err)

	// Once per tab: the next command goes straight out.
	done = sendAsync(a.b, browserbackend.Command{Method: "Page.reload", SessionID: "1"})
	assert.Equal(t, "Page.reload", answer(t, p, ext, `{}`, false)["cdpMethod"])
	require.NoError(t, (<-done).err)

	postEvent(t, p, `{"type":"host_browser_event","method":"Page.lifecycleEvent","params":{"frameId":"T-ONE","name":"load"}}`)
	a.next(t)
	b.none(t)
}
