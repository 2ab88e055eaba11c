package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/hostproxy"
)

// pageFake is a fakeBrowser attached to one page: its events are the
// page's, it tells its target and session, and answers Target.getTargetInfo.
type pageFake struct {
	*fakeBrowser
	target string
	lost   atomic.Bool // the browser connection ended (Lost)
}

func (p *pageFake) Lost() bool { return p.lost.Load() }

func (p *pageFake) TargetID() string  { return p.target }
func (p *pageFake) SessionID() string { return "session-of-" + p.target }

func (p *pageFake) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	if cmd.Method == "Target.getTargetInfo" {
		return json.RawMessage(`{"targetInfo":{"targetId":"` + p.target + `","type":"page"}}`), nil
	}
	if cmd.Method == "Fail.detached" {
		return nil, browserbackend.TransportError(browserbackend.CodeSessionNotFound, "the page session went away", nil)
	}
	if cmd.Method == "Fail.detachedInFlight" {
		e := browserbackend.TransportError(browserbackend.CodeSessionNotFound, "the page session went away", nil)
		e.Dispatched = true
		return nil, e
	}
	return p.fakeBrowser.Send(ctx, cmd)
}

// TestBridge_EachConversationHasItsOwnPageAndOnlyItsEvents: with
// DialConversation, each conversation's requests run on its own browser
// connection (dialled once), its page's events are posted with the page's
// target id, and a host-bridge backend of one conversation never receives
// the other conversation's page events (WIRE-4).
func TestBridge_EachConversationHasItsOwnPageAndOnlyItsEvents(t *testing.T) {
	ts := newTestServer(t, map[string]string{"tok": "alice"})
	var mu sync.Mutex
	pages := map[string]*pageFake{}
	dials := map[string]int{}
	dialConv := func(_ context.Context, conv string) (Browser, error) {
		mu.Lock()
		defer mu.Unlock()
		dials[conv]++
		if pages[conv] == nil {
			pages[conv] = &pageFake{fakeBrowser: newFakeBrowser(), target: "T-" + conv}
		}
		return pages[conv], nil
	}
	runBridge(t, ts, Options{Token: "tok", ClientID: "mac-1", Dial: dialer(newFakeBrowser()), DialConversation: dialConv})
	ctx := context.Background()
	backend := func(conv string) *hostproxy.BridgeBackend {
		be := ts.proxy.NewHostBridgeBackend(browserbackend.Invocation{ConversationID: conv, ActorPrincipalID: "alice"}, hostproxy.BackendOptions{})
		t.Cleanup(func() { be.Close() })
		return be
	}
	count := func(be *hostproxy.BridgeBackend, conv string) int {
		res, err := be.Send(ctx, browserbackend.Command{Method: "Count.inc"})
		require.NoError(t, err)
		var n struct{ N int }
		require.NoError(t, json.Unmarshal(res, &n))
		return n.N
	}

	// First calls: each conversation gets a browser of its own.
	a1 := backend("A")
	firstA, stopA := a1.Subscribe("Page.loadEventFired")
	defer stopA()
	assert.Equal(t, 1, count(a1, "A"))
	assert.Equal(t, 2, count(a1, "A"))
	b1 := backend("B")
	assert.Equal(t, 1, count(b1, "B"), "B's commands run on another browser than A's")
	mu.Lock()
	assert.Equal(t, map[string]int{"A": 1, "B": 1}, dials, "one dial per conversation")
	pa, pb := pages["A"], pages["B"]
	mu.Unlock()

	// A page event is posted naming its target.
	pa.bus.Publish(browserbackend.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{"timestamp":1}`), SessionID: pa.SessionID()})
	ev := <-firstA
	assert.Equal(t, "T-A", ev.SessionID, "the page's events name its target")
	a1.Close()
	b1.Close()

	// Later calls ask which page they run on and get only its events.
	a2, b2 := backend("A"), backend("B")
	assert.Equal(t, 3, count(a2, "A"))
	assert.Equal(t, 2, count(b2, "B"))
	evA, stop1 := a2.Subscribe("Page.frameNavigated")
	defer stop1()
	evB, stop2 := b2.Subscribe("Page.frameNavigated")
	defer stop2()
	pb.bus.Publish(browserbackend.Event{Method: "Page.frameNavigated", Params: json.RawMessage(`{"frame":{"id":"T-B","url":"b"}}`), SessionID: pb.SessionID()})
	pa.bus.Publish(browserbackend.Event{Method: "Page.frameNavigated", Params: json.RawMessage(`{"frame":{"id":"T-A","url":"a"}}`), SessionID: pa.SessionID()})
	// The server routes an event to every backend it reaches before the
	// post returns: once each has its own event, any leak would be queued.
	assert.JSONEq(t, `{"frame":{"id":"T-B","url":"b"}}`, string((<-evB).Params))
	assert.JSONEq(t, `{"frame":{"id":"T-A","url":"a"}}`, string((<-evA).Params))
	for name, ch := range map[string]<-chan browserbackend.Event{"A": evA, "B": evB} {
		select {
		case ev := <-ch:
			t.Fatalf("%s received the other page's event %s", name, ev.Params)
		default:
		}
	}
	// A call without a conversation runs on Dial's browser.
	res, err := ts.proxy.Request(ctx, hostproxy.Req{Method: "Count.inc", SourceActor: "alice", Route: hostproxy.RouteBridge})
	require.NoError(t, err)
	assert.JSONEq(t, `{"n":1}`, string(res))
}

// TestBridge_APageThatWentAwayIsReportedBeforeAnotherIsUsed: without
// DialConversation every command runs on the page Dial attached to; once
// that page goes away (its session detached, seen as an event or by the
// command in flight), the next request fails with target_not_found
// instead of running on whichever page Dial would find now, and only the
// request after it dials again.
func TestBridge_APageThatWentAwayIsReportedBeforeAnotherIsUsed(t *testing.T) {
	ts := newTestServer(t, map[string]string{"tok": "alice"})
	var mu sync.Mutex
	var pages []*pageFake
	dial := func(context.Context) (Browser, error) {
		mu.Lock()
		defer mu.Unlock()
		p := &pageFake{fakeBrowser: newFakeBrowser(), target: fmt.Sprintf("T%d", len(pages)+1)}
		pages = append(pages, p)
		return p, nil
	}
	last := func() *pageFake {
		mu.Lock()
		defer mu.Unlock()
		return pages[len(pages)-1]
	}
	runBridge(t, ts, Options{Token: "tok", ClientID: "mac-1", Dial: dial})
	be := ts.proxy.NewHostBridgeBackend(browserbackend.Invocation{ActorPrincipalID: "alice"}, hostproxy.BackendOptions{})
	defer be.Close()
	ctx := context.Background()
	send := func(method string) error {
		_, err := be.Send(ctx, browserbackend.Command{Method: method})
		return err
	}

	require.NoError(t, send("Count.inc"))
	first := last()

	// The page's session detaches between two requests. An event posted
	// after it reaching the server means the bridge has read the detach.
	marker, stop := be.Subscribe("Page.loadEventFired")
	defer stop()
	first.bus.Publish(browserbackend.Event{Method: browserbackend.MethodTargetDetached,
		Params: json.RawMessage(`{"sessionId":"` + first.SessionID() + `"}`), SessionID: first.SessionID()})
	first.bus.Publish(browserbackend.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{}`), SessionID: first.SessionID()})
	<-marker

	// pageGone reports whether err is the page-gone error of method.
	pageGone := func(err error, method string) bool {
		var e *browserbackend.Error
		return errors.As(err, &e) && e.Code == browserbackend.CodeTargetNotFound && e.Method == method
	}
	err := send("Count.inc")
	require.True(t, pageGone(err, "Count.inc"), "%v", err)
	assert.ErrorContains(t, err, "went away (target T1)")
	assert.ErrorIs(t, err, browserbackend.ErrProtocol, "no failover: the agent's page is gone, not the browser")
	require.NoError(t, send("Count.inc"), "the request after the error attaches again")
	second := last()
	assert.Equal(t, "T2", second.target)

	// The page goes away under a command in flight: that command says so,
	// and the next one dials without a second error.
	err = send("Fail.detached")
	require.True(t, pageGone(err, "Fail.detached"), "%v", err)
	assert.ErrorContains(t, err, "(target T2)")
	require.NoError(t, send("Count.inc"))
	third := last()
	assert.Equal(t, "T3", third.target)

	// A browser connection that ends detaches its page too (cdpinspect
	// publishes a detach before its stream closes): that is a lost
	// browser, not a page that went away, and the next request dials
	// again at once, as after any transport failure.
	third.lost.Store(true)
	third.bus.Publish(browserbackend.Event{Method: browserbackend.MethodTargetDetached,
		Params: json.RawMessage(`{"sessionId":"` + third.SessionID() + `"}`), SessionID: third.SessionID()})
	third.bus.Publish(browserbackend.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{}`), SessionID: third.SessionID()})
	<-marker
	require.NoError(t, send("Count.inc"), "a lost browser is dialled again, not reported as a closed page")
	assert.Equal(t, "T4", last().target)
}

// A conversation's tab the user closed is target_not_found (no failover)
// for the command that finds its session gone, whether the session was
// gone before the command was sent or its detach came while the command
// was in flight (make stress: the detach was late, the command failed as a
// transport error, the selector failed over, and the agent learned of the
// closed tab only on its next call).
func TestBridge_AConversationTabClosedUnderACommandIsTargetNotFound(t *testing.T) {
	ts := newTestServer(t, map[string]string{"tok": "alice"})
	var mu sync.Mutex
	dials := map[string]int{}
	dialConv := func(_ context.Context, conv string) (Browser, error) {
		mu.Lock()
		defer mu.Unlock()
		dials[conv]++
		if dials[conv] == 1 {
			return &pageFake{fakeBrowser: newFakeBrowser(), target: "T-" + conv}, nil
		}
		return nil, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeTargetNotFound,
			Backend: browserbackend.KindHostBridge, Message: "the conversation's tab was closed (target T-" + conv + ")"}
	}
	runBridge(t, ts, Options{Token: "tok", ClientID: "mac-1", Dial: dialer(newFakeBrowser()), DialConversation: dialConv})
	for conv, method := range map[string]string{"before": "Fail.detached", "in-flight": "Fail.detachedInFlight"} {
		be := ts.proxy.NewHostBridgeBackend(browserbackend.Invocation{ConversationID: conv, ActorPrincipalID: "alice"}, hostproxy.BackendOptions{})
		_, err := be.Send(context.Background(), browserbackend.Command{Method: "Count.inc"})
		require.NoError(t, err, conv)
		_, err = be.Send(context.Background(), browserbackend.Command{Method: method})
		var e *browserbackend.Error
		require.ErrorAs(t, err, &e, conv)
		assert.Equal(t, browserbackend.CodeTargetNotFound, e.Code, "%s: %v", conv, err)
		assert.ErrorIs(t, err, browserbackend.ErrProtocol, "%s: no failover", conv)
		be.Close()
	}
}
