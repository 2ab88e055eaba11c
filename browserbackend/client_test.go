package browserbackend_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	bbt "github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// SEL-1 client lifecycle and concurrency, SEL-14 events and sessions.

func TestCloseIsIdempotent(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := sel.Client(bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	assert.True(t, ps[0].Backends()[0].Closed())
}

func TestSendAfterCloseFailsWithClosedClass(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)

	unused := sel.Client(bb.Invocation{})
	require.NoError(t, unused.Close())
	_, err := unused.Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, bb.ErrClosed)
	assert.Zero(t, ps[0].Builds(), "a closed client selects nothing")

	used := sel.Client(bb.Invocation{})
	_, err = used.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	require.NoError(t, used.Close())
	_, err = used.Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, bb.ErrClosed)
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.CodeClosed, e.Code)
	assert.Len(t, ps[0].Backends()[0].Calls(), 1, "nothing reaches the backend after Close")

	_, err = used.Session("S1").Send(context.Background(), evalCommand)
	assert.ErrorIs(t, err, bb.ErrClosed)
}

// closeCounter is a backend returned together with a construction error.
type closeCounter struct {
	bb.SendFunc
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestCloseDisposesEveryMaterialisedBackendIncludingFailedOnes(t *testing.T) {
	half := &closeCounter{}
	halfBuilt := bb.ProviderFunc(hostproxytest.ReferenceDescriptor(bb.KindHostBridge), func(bb.Invocation, bb.Env) (bb.Candidate, error) {
		return bb.Candidate{Build: func(context.Context) (bb.ScopedClient, error) {
			return half, bbt.TransportErr(bb.CodeUnreachable) // a dial that got half way
		}}, nil
	})
	ps := fakes(bb.KindExtension, bb.KindCDPInspect, bb.KindLocal)
	ps[0].NewBackend = failingBackend(bb.KindExtension, bbt.TransportErr(""))
	ps[1].NewBackend = failingBackend(bb.KindCDPInspect, bbt.TransportErr(""))
	sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{ps[0], halfBuilt, ps[1], ps[2]},
		Logger: slog.New(slog.DiscardHandler)})
	c := sel.Client(bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	assert.Equal(t, bb.KindLocal, c.Kind())

	require.NoError(t, c.Close())
	assert.Equal(t, 1, half.closed, "a backend returned with a build error is closed")
	for _, p := range ps {
		require.Len(t, p.Backends(), 1, p.K)
		assert.True(t, p.Backends()[0].Closed(), "%s backend closed", p.K)
	}
}

func TestCloseDuringSelectionEndsTheWalkWithClosed(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	var c *bb.Client
	ps[0].NewBackend = func() *bbt.Backend {
		return bbt.NewBackend(bb.KindExtension, func(ctx context.Context, cmd bb.Command) (json.RawMessage, error) {
			c.Close() // the tool is torn down while the first command is in flight
			return nil, bbt.TransportErr("")
		})
	}
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c = sel.Client(bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.ErrorIs(t, err, bb.ErrClosed)
	assert.Zero(t, ps[1].Builds()+len(ps[1].Backends()), "no backend is built after Close")
	for _, b := range ps[0].Backends() {
		assert.True(t, b.Closed())
	}
}

func TestFiftyGoroutinesSendOnOneClient(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].BuildErr = bbt.TransportErr("")
	ps[1].NewBackend = func() *bbt.Backend {
		return bbt.NewBackend(bb.KindLocal, func(_ context.Context, cmd bb.Command) (json.RawMessage, error) {
			return cmd.Params, nil // echo
		})
	}
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})

	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			params := json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
			res, err := c.Send(context.Background(), bb.Command{Method: "Runtime.evaluate", Params: params})
			if err == nil && string(res) != string(params) {
				err = fmt.Errorf("goroutine %d got %s", i, res)
			}
			errs[i] = err
			_ = c.Kind()
			_ = c.Attempts()
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, 1, ps[0].Builds(), "selection ran once")
	assert.Equal(t, 1, ps[1].Builds())
	assert.Len(t, ps[1].Backends()[0].Calls(), n)
	assert.Equal(t, []string{"extension@construction[transport_error]", "local@success"}, summary(c.Attempts()))
}

func TestConcurrentInvocationsDoNotSeeEachOthersSelection(t *testing.T) {
	// Both first commands are held in flight until the other has arrived, so
	// the two walks overlap.
	arrived := make(chan bb.Kind, 2)
	release := make(chan struct{})
	hold := func(k bb.Kind) bbt.Reply {
		return func(context.Context, bb.Command) (json.RawMessage, error) {
			arrived <- k
			<-release
			return json.RawMessage(fmt.Sprintf(`{"kind":%q}`, k)), nil
		}
	}
	r := newRig(aliceExt, bobMac)
	r.farm.OnBuild(bb.KindExtension, func(string) (*bbt.Backend, error) {
		return bbt.NewBackend(bb.KindExtension, hold(bb.KindExtension)), nil
	})
	r.farm.OnBuild(bb.KindHostBridge, func(string) (*bbt.Backend, error) {
		return bbt.NewBackend(bb.KindHostBridge, hold(bb.KindHostBridge)), nil
	})
	r.build(bb.Options{})

	ca := r.sel.Client(bb.Invocation{ConversationID: "a", ActorPrincipalID: alice})
	cb := r.sel.Client(bb.Invocation{ConversationID: "b", ActorPrincipalID: bob})
	defer ca.Close()
	defer cb.Close()
	results := make(chan string, 2)
	for _, c := range []*bb.Client{ca, cb} {
		go func() {
			res, err := c.Send(context.Background(), evalCommand)
			if err != nil {
				results <- err.Error()
				return
			}
			results <- string(res)
		}()
	}
	got := []bb.Kind{<-arrived, <-arrived}
	assert.ElementsMatch(t, kinds(bb.KindExtension, bb.KindHostBridge), got)
	close(release)
	assert.ElementsMatch(t, []string{`{"kind":"extension"}`, `{"kind":"host-bridge"}`}, []string{<-results, <-results})

	assert.Equal(t, bb.KindExtension, ca.Kind())
	assert.Equal(t, bb.KindHostBridge, cb.Kind())
	assert.Equal(t, []string{"extension@success"}, tried(ca.Attempts()))
	assert.Equal(t, []string{"host-bridge@success"}, tried(cb.Attempts()))
	ka, _ := r.sel.Memo().Get("a")
	kb, _ := r.sel.Memo().Get("b")
	assert.Equal(t, kinds(bb.KindExtension, bb.KindHostBridge), kinds(ka, kb))
}

func TestEventsSubscribedBeforeFirstSendArriveAfterStick(t *testing.T) {
	ps := fakes(bb.KindExtension, bb.KindLocal)
	ps[0].BuildErr = bbt.TransportErr("")
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	loads := cdp.Events(ctx, c, page.LoadEventFired) // subscribed before the backend exists
	_, err := cdp.Call(ctx, c, page.Enable, page.EnableParams{})
	require.NoError(t, err)
	b := ps[1].Backends()[0]
	assert.Equal(t, []string{"Page.enable"}, b.Methods())

	b.Emit(bb.Event{Method: "Page.frameNavigated", Params: json.RawMessage(`{}`)})
	b.Emit(bb.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{"timestamp":12.5}`)})
	for ev, err := range loads {
		require.NoError(t, err)
		assert.Equal(t, 12.5, ev.Timestamp.Float64())
		break
	}
}

func TestEventsSubscribedAfterStickArrive(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)

	all, cancelAll := c.Events("")
	defer cancelAll()
	one, cancelOne := c.Events("Network.requestWillBeSent")
	defer cancelOne()
	b := ps[0].Backends()[0]
	b.Emit(bb.Event{Method: "Network.requestWillBeSent", Params: json.RawMessage(`{"requestId":"1"}`)})
	b.Emit(bb.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{"timestamp":1}`)})

	assert.Equal(t, "Network.requestWillBeSent", (<-one).Method)
	assert.Equal(t, "Network.requestWillBeSent", (<-all).Method)
	assert.Equal(t, "Page.loadEventFired", (<-all).Method, "each event reaches the catch-all subscriber once")
}

func TestEventChannelsCloseOnClientClose(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := sel.Client(bb.Invocation{})
	evs, cancel := c.Events("Page.loadEventFired")
	defer cancel()
	raw, cancelRaw := c.Subscribe("Page.loadEventFired")
	defer cancelRaw()
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, ok := <-evs
	assert.False(t, ok)
	_, ok = <-raw
	assert.False(t, ok)
}

func TestTargetDetachedInvalidatesSession(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	detached, cancel := c.Events(bb.MethodTargetDetached)
	defer cancel()

	s1, s2 := c.Session("S1"), c.Session("S2")
	assert.Equal(t, "S1", s1.SessionID())
	_, err := s1.Send(context.Background(), bb.Command{Method: "Runtime.evaluate", SessionID: "ignored"})
	require.NoError(t, err)
	b := ps[0].Backends()[0]
	require.Equal(t, "S1", b.Calls()[0].SessionID, "the view's session id wins")

	b.Emit(bb.Event{Method: bb.MethodTargetDetached, Params: json.RawMessage(`{"sessionId":"S1","targetId":"T1"}`)})
	ev := <-detached // delivered after the client has invalidated the session
	assert.JSONEq(t, `{"sessionId":"S1","targetId":"T1"}`, string(ev.Params))

	_, err = s1.Send(context.Background(), bb.Command{Method: "Page.navigate"})
	require.ErrorIs(t, err, bb.ErrSessionNotFound)
	err = s1.Call(context.Background(), "Page.reload", nil, nil)
	require.ErrorIs(t, err, bb.ErrSessionNotFound)
	assert.Len(t, b.Calls(), 1, "a command for a gone session is not sent anywhere")

	_, err = s2.Send(context.Background(), bb.Command{Method: "Page.navigate"})
	require.NoError(t, err, "other sessions are unaffected")
	_, err = c.Send(context.Background(), bb.Command{Method: "Target.getTargets"})
	require.NoError(t, err, "browser-level commands are unaffected")
}

func TestSessionViewSubscribeSeesOnlyItsSession(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loads := cdp.Events(ctx, c.Session("S2"), page.LoadEventFired)
	_, err := c.Send(ctx, evalCommand)
	require.NoError(t, err)
	b := ps[0].Backends()[0]
	b.Emit(bb.Event{Method: "Page.loadEventFired", SessionID: "S1", Params: json.RawMessage(`{"timestamp":1}`)})
	b.Emit(bb.Event{Method: "Page.loadEventFired", SessionID: "S2", Params: json.RawMessage(`{"timestamp":2}`)})
	for ev, err := range loads {
		require.NoError(t, err)
		assert.Equal(t, 2.0, ev.Timestamp.Float64())
		break
	}
}

func TestEventsIteratorStopsWithContext(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range cdp.Events(ctx, c, page.LoadEventFired) {
		require.ErrorIs(t, err, context.Canceled)
	}
}

// The client's own watch of Target.detachedFromTarget (held for the whole
// invocation, whether or not anyone subscribed) asks its backend for a small
// buffer; a subscriber's method gets the backend's default.
func TestClientWatchesDetachesWithASmallBuffer(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, cancel := c.Events("Page.loadEventFired")
	defer cancel()
	_, err := c.Send(context.Background(), evalCommand)
	require.NoError(t, err)
	subs := ps[0].Backends()[0].Subscriptions()
	byMethod := map[string]int{}
	for _, s := range subs {
		byMethod[s.Method] = s.Buffer
	}
	require.Len(t, subs, 2)
	assert.Positive(t, byMethod[bb.MethodTargetDetached])
	assert.Less(t, byMethod[bb.MethodTargetDetached], bb.DefaultEventBuffer/8)
	assert.Equal(t, 0, byMethod["Page.loadEventFired"])
}

func TestEventBusSubscribeBufferSizesTheChannel(t *testing.T) {
	bus := &bb.EventBus{}
	small, cancel := bus.SubscribeBuffer("", 2)
	defer cancel()
	dflt, cancelDflt := bus.Subscribe("")
	defer cancelDflt()
	assert.Equal(t, 2, cap(small))
	assert.Equal(t, bb.DefaultEventBuffer, cap(dflt))
	for i := range 3 {
		bus.Publish(bb.Event{Method: fmt.Sprint("E", i)})
	}
	assert.Equal(t, int64(1), bus.Dropped(), "only the small subscriber lost one")
	assert.Equal(t, "E0", (<-small).Method)
	sized := &bb.EventBus{Buffer: 5}
	ch, cancelSized := sized.SubscribeBuffer("", 0)
	defer cancelSized()
	assert.Equal(t, 5, cap(ch), "0 means the bus's Buffer")
	bus.Close()
	_, ok := <-dflt
	for ok {
		_, ok = <-dflt
	}
	after, _ := bus.SubscribeBuffer("", 2)
	_, ok = <-after
	assert.False(t, ok, "after Close a closed channel")
}

func TestEventBusDropsForSlowSubscriberWithoutBlocking(t *testing.T) {
	bus := &bb.EventBus{Buffer: 2}
	ch, cancel := bus.Subscribe("")
	for i := range 5 {
		bus.Publish(bb.Event{Method: fmt.Sprint("E", i)})
	}
	assert.Equal(t, int64(3), bus.Dropped())
	assert.Equal(t, "E0", (<-ch).Method)
	assert.Equal(t, "E1", (<-ch).Method)
	cancel()
	cancel()
	bus.Close()
	bus.Close()
	_, ok := <-ch
	assert.False(t, ok, "cancel closes the channel")
	late, _ := bus.Subscribe("x")
	_, ok = <-late
	assert.False(t, ok, "subscribing after Close gives a closed channel")
}

func TestTypedCallWithUndecodableResultIsInvalidResponse(t *testing.T) {
	ps := fakes(bb.KindLocal)
	ps[0].NewBackend = func() *bbt.Backend { return bbt.NewBackend(bb.KindLocal, bbt.JSON(map[string]any{"result": 5})) }
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := cdp.Call(context.Background(), c, runtime.Evaluate, runtime.EvaluateParams{Expression: "1"})
	require.ErrorIs(t, err, bb.ErrInvalidResponse)
	var e *bb.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bb.KindLocal, e.Backend)
	assert.Equal(t, "Runtime.evaluate", e.Method)
}

func TestTypedCallWithoutParamsSendsNoParams(t *testing.T) {
	ps := fakes(bb.KindLocal)
	sel, _ := fakeSelector(bb.Options{}, ps...)
	c := openClient(t, sel, bb.Invocation{})
	_, err := cdp.Call(context.Background(), c, page.Enable, page.EnableParams{})
	require.NoError(t, err)
	require.NoError(t, c.Call(context.Background(), "Page.reload", nil, nil))
	calls := ps[0].Backends()[0].Calls()
	require.Len(t, calls, 2)
	assert.Empty(t, calls[0].Params)
	assert.Empty(t, calls[1].Params)
}

func TestConcurrentSubscribeSendEmitAndCloseAreRaceFree(t *testing.T) {
	for range 20 {
		ps := fakes(bb.KindLocal)
		sel, _ := fakeSelector(bb.Options{}, ps...)
		c := sel.Client(bb.Invocation{})
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				<-start
				ch, cancel := c.Events(fmt.Sprint("Domain.event", i%3))
				_, _ = c.Send(context.Background(), evalCommand)
				_, _ = c.Session("S").Send(context.Background(), evalCommand)
				for _, b := range ps[0].Backends() {
					b.Emit(bb.Event{Method: fmt.Sprint("Domain.event", i%3)})
				}
				if i%2 == 0 {
					cancel()
				}
				for range ch { // drains until cancel or Close
					if i%2 == 1 {
						break
					}
				}
			})
		}
		wg.Go(func() {
			<-start
			_ = c.Close()
		})
		close(start)
		require.NoError(t, c.Close())
		wg.Wait()
		_, err := c.Send(context.Background(), evalCommand)
		require.ErrorIs(t, err, bb.ErrClosed)
		for _, b := range ps[0].Backends() {
			assert.True(t, b.Closed())
		}
	}
}

func TestEventsEmittedDuringTheFirstCommandAreNotLost(t *testing.T) {
	// In a bubble a lost event deadlocks the test instead of hanging it.
	synctest.Test(t, func(t *testing.T) {
		// Runtime.enable reports the existing contexts before its reply: a
		// subscriber that asked first must see them even though the backend
		// only becomes sticky when the reply arrives.
		ps := fakes(bb.KindExtension, bb.KindLocal)
		ps[0].BuildErr = bbt.TransportErr("")
		var local *bbt.Backend
		ps[1].NewBackend = func() *bbt.Backend {
			local = bbt.NewBackend(bb.KindLocal, func(_ context.Context, cmd bb.Command) (json.RawMessage, error) {
				if cmd.Method == "Runtime.enable" {
					local.Emit(bb.Event{Method: "Runtime.executionContextCreated", Params: json.RawMessage(`{"context":{"id":1}}`)})
				}
				return nil, nil
			})
			return local
		}
		sel, _ := fakeSelector(bb.Options{}, ps...)
		c := openClient(t, sel, bb.Invocation{})
		created, cancel := c.Events("Runtime.executionContextCreated")
		defer cancel()

		_, err := c.Send(context.Background(), bb.Command{Method: "Runtime.enable"})
		require.NoError(t, err)
		ev := <-created
		assert.JSONEq(t, `{"context":{"id":1}}`, string(ev.Params))
	})
}

func TestEventsOfAFailedCandidateAreNotDelivered(t *testing.T) {
	// In a bubble a lost event deadlocks the test instead of hanging it.
	synctest.Test(t, func(t *testing.T) {
		ps := fakes(bb.KindExtension, bb.KindLocal)
		var ext *bbt.Backend
		ps[0].NewBackend = func() *bbt.Backend {
			ext = bbt.NewBackend(bb.KindExtension, func(context.Context, bb.Command) (json.RawMessage, error) {
				ext.Emit(bb.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{"timestamp":1}`)})
				return nil, bbt.TransportErr("")
			})
			return ext
		}
		var local *bbt.Backend
		ps[1].NewBackend = func() *bbt.Backend {
			local = bbt.NewBackend(bb.KindLocal, func(context.Context, bb.Command) (json.RawMessage, error) {
				local.Emit(bb.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{"timestamp":2}`)})
				return nil, nil
			})
			return local
		}
		sel, _ := fakeSelector(bb.Options{}, ps...)
		c := openClient(t, sel, bb.Invocation{})
		loads, cancel := c.Events("Page.loadEventFired")
		defer cancel()
		_, err := c.Send(context.Background(), evalCommand)
		require.NoError(t, err)
		assert.JSONEq(t, `{"timestamp":2}`, string((<-loads).Params), "only the backend that serves the invocation speaks")
	})
}

// Events a slow cdp.Session subscriber cannot take are dropped, never
// blocking the backend, and counted.
func TestDroppedEventsAreCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := bbt.NewBackend(bb.KindLocal, nil)
		p := &bbt.Provider{K: bb.KindLocal, NewBackend: func() *bbt.Backend { return backend }}
		sel := bb.NewSelector(bb.Options{Providers: []bb.Provider{p}, Logger: bbt.DiscardLogger()})
		c := sel.Client(bb.Invocation{})
		defer c.Close()
		events, cancel := c.Subscribe("Page.frameNavigated")
		defer cancel()
		_, err := c.Send(context.Background(), evalCommand)
		require.NoError(t, err)

		const n = 3 * bb.DefaultEventBuffer
		for range n {
			backend.Emit(bb.Event{Method: "Page.frameNavigated", Params: []byte(`{}`)})
			synctest.Wait() // let the forwarders move it along
		}
		assert.Equal(t, int64(n-bb.DefaultEventBuffer), c.DroppedEvents(), "all but one buffer's worth dropped")
		assert.Len(t, events, bb.DefaultEventBuffer)
	})
}
