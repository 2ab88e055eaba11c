package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testServer is hostproxytest's runtime plus a record of the result posts
// and of the Last-Event-ID of every subscription.
type testServer struct {
	*hostproxytest.Server
	hub   *eventhub.InProcess
	proxy *hostproxy.Proxy

	mu           sync.Mutex
	results      []hostproxy.ResultBody
	lastEventIDs []string
}

func newTestServer(t testing.TB, tokens map[string]string) *testServer {
	t.Helper()
	ts := &testServer{}
	ts.Server = hostproxytest.NewServer(t, hostproxytest.ServerOptions{Tokens: tokens, Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case wire.PathEvents:
				ts.mu.Lock()
				ts.lastEventIDs = append(ts.lastEventIDs, r.Header.Get(wire.HeaderLastEventID))
				ts.mu.Unlock()
			case wire.PathHostBrowserResult:
				raw, _ := io.ReadAll(r.Body)
				var body hostproxy.ResultBody
				_ = json.Unmarshal(raw, &body)
				ts.mu.Lock()
				ts.results = append(ts.results, body)
				ts.mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(raw))
			}
			next.ServeHTTP(w, r)
		})
	}})
	ts.hub, ts.proxy = ts.Hub, ts.Proxy
	return ts
}

func (ts *testServer) resultPostsFor(id string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, r := range ts.results {
		if r.RequestID == id {
			n++
		}
	}
	return n
}

var waitClient = hostproxytest.WaitClient

// fakeBrowser answers a few made-up methods.
type fakeBrowser struct {
	counted atomic.Int64 // Count.inc executions
	bus     browserbackend.EventBus
	started chan string // method names of commands that started blocking
	closed  chan struct{}
	once    sync.Once
}

func newFakeBrowser() *fakeBrowser {
	return &fakeBrowser{started: make(chan string, 16), closed: make(chan struct{})}
}

func (f *fakeBrowser) Send(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
	switch cmd.Method {
	case "Echo.echo":
		if len(cmd.Params) == 0 {
			return json.RawMessage(`{}`), nil
		}
		return cmd.Params, nil
	case "Count.inc":
		return json.RawMessage(fmt.Sprintf(`{"n":%d}`, f.counted.Add(1))), nil
	case "Block.forever":
		f.started <- cmd.Method
		<-ctx.Done()
		return nil, browserbackend.Classify(ctx.Err(), true)
	case "Fail.protocol":
		return nil, browserbackend.ProtocolError(-32601, "'Fail.protocol' wasn't found")
	case "Fail.transport":
		return nil, browserbackend.TransportError(browserbackend.CodeUnreachable, "socket closed", nil)
	}
	return nil, browserbackend.ProtocolError(-32601, "unknown method")
}

func (f *fakeBrowser) Subscribe(method string) (<-chan browserbackend.Event, func()) {
	return f.bus.Subscribe(method)
}

func (f *fakeBrowser) Close() error {
	// The bridge re-dials after a transport error and gets the same fake
	// again, so Close leaves the bus open; the bridge's own subscription is
	// cancelled by the bridge.
	f.once.Do(func() { close(f.closed) })
	return nil
}

// runBridge runs a bridge until the test ends and waits for it to connect.
func runBridge(t testing.TB, ts *testServer, opts Options) *Bridge {
	t.Helper()
	opts.ServerURL = ts.URL
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 10 * time.Millisecond
	}
	b, err := New(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	})
	waitClient(t, ts.hub, b.ClientID(), true)
	return b
}

func dialer(br Browser) Dialer {
	return func(context.Context) (Browser, error) { return br, nil }
}

func TestBridge_ExecutesRequestsClassifiesErrorsAndForwardsEvents(t *testing.T) {
	ts := newTestServer(t, map[string]string{"tok-alice": "alice"})
	br := newFakeBrowser()
	b := runBridge(t, ts, Options{Token: "tok-alice", ClientID: "mac-1", Dial: dialer(br)})
	info, ok := ts.hub.Client(b.ClientID())
	require.True(t, ok)
	assert.Equal(t, "alice", info.ActorPrincipalID, "the actor comes from the token")
	assert.Equal(t, wire.InterfaceMacOS, info.InterfaceID)

	be := ts.proxy.NewHostBridgeBackend(browserbackend.Invocation{ActorPrincipalID: "alice"}, hostproxy.BackendOptions{})
	defer be.Close()
	ctx := context.Background()

	res, err := be.Send(ctx, browserbackend.Command{Method: "Echo.echo", Params: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"x":1}`, string(res))

	_, err = be.Send(ctx, browserbackend.Command{Method: "Fail.protocol"})
	assert.ErrorIs(t, err, browserbackend.ErrProtocol)
	assert.ErrorIs(t, err, browserbackend.ErrMethodNotFound)

	loads, stop := be.Subscribe("Page.loadEventFired")
	defer stop()
	br.bus.Publish(browserbackend.Event{Method: "Page.loadEventFired", Params: json.RawMessage(`{"timestamp":3}`)})
	ev := <-loads
	assert.JSONEq(t, `{"timestamp":3}`, string(ev.Params))

	detached, stop2 := be.Subscribe(browserbackend.MethodTargetDetached)
	defer stop2()
	br.bus.Publish(browserbackend.Event{Method: browserbackend.MethodTargetDetached,
		Params: json.RawMessage(`{"sessionId":"S2","targetId":"T2"}`), SessionID: "S2"})
	ev = <-detached
	assert.Equal(t, "S2", ev.SessionID, "a detached flat session arrives as a session invalidation")

	// A transport failure drops the browser connection; the next command re-dials.
	_, err = be.Send(ctx, browserbackend.Command{Method: "Fail.transport"})
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	assert.ErrorIs(t, err, browserbackend.ErrUnreachable)

	// Vellum.* never reaches a bridge: refused on the server side.
	_, err = ts.proxy.Request(ctx, hostproxy.Req{Method: wire.MethodListTabs})
	assert.ErrorIs(t, err, browserbackend.ErrExtensionRequired)

	res, err = be.Send(ctx, browserbackend.Command{Method: "Echo.echo"})
	require.NoError(t, err)
	assert.JSONEq(t, `{}`, string(res))
}

func TestBridge_CancelStopsTheCommandAndPostsNoResult(t *testing.T) {
	ts := newTestServer(t, nil)
	br := newFakeBrowser()
	done := make(chan [2]string, 4)
	runBridge(t, ts, Options{Dial: dialer(br), Hooks: Hooks{RequestDone: func(id, method, outcome string, _ bool) {
		done <- [2]string{id, outcome}
	}}})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := ts.proxy.Request(ctx, hostproxy.Req{Method: "Block.forever"})
		errc <- err
	}()
	<-br.started // the command is running in the browser
	cancel()
	assert.ErrorIs(t, <-errc, browserbackend.ErrAborted)
	got := <-done // the bridge saw the cancel and finished the request
	assert.Equal(t, OutcomeCancelled, got[1])
	assert.Zero(t, ts.resultPostsFor(got[0]), "no result after a cancel")
}

func TestBridge_ReconnectsWithLastEventID(t *testing.T) {
	ts := newTestServer(t, nil)
	connected := make(chan struct{}, 4)
	b := runBridge(t, ts, Options{Dial: dialer(newFakeBrowser()), Hooks: Hooks{Connected: func() { connected <- struct{}{} }}})
	<-connected
	id, err := ts.hub.Publish(context.Background(), eventhub.Target{ClientID: b.ClientID()}, "", map[string]string{"type": "something_else"})
	require.NoError(t, err)
	// The bridge has read the frame once a request published after it is answered.
	_, err = ts.proxy.Request(context.Background(), hostproxy.Req{Method: "Echo.echo"})
	require.NoError(t, err)

	require.True(t, ts.hub.Unregister(b.ClientID()), "drop the stream server-side")
	<-connected // reconnected
	waitClient(t, ts.hub, b.ClientID(), true)
	ts.mu.Lock()
	ids := append([]string(nil), ts.lastEventIDs...)
	ts.mu.Unlock()
	require.Len(t, ids, 2)
	assert.Empty(t, ids[0])
	assert.NotEmpty(t, ids[1])
	assert.NotEqual(t, id, "")
	_, err = ts.proxy.Request(context.Background(), hostproxy.Req{Method: "Echo.echo"})
	assert.NoError(t, err, "requests flow again after the reconnect")
}

func TestBridge_RefusedSubscriptionEndsRun(t *testing.T) {
	ts := newTestServer(t, map[string]string{"good": "alice"})
	b, err := New(Options{ServerURL: ts.URL, Token: "bad", Dial: dialer(newFakeBrowser()), Logger: quiet()})
	require.NoError(t, err)
	err = b.Run(context.Background())
	var se *statusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusUnauthorized, se.code)
}

func TestBridge_UnreachableBrowserAnswersStructuredCode(t *testing.T) {
	ts := newTestServer(t, nil)
	runBridge(t, ts, Options{Dial: func(context.Context) (Browser, error) {
		return nil, browserbackend.TransportError(browserbackend.CodeUnreachable, "no DevTools on 127.0.0.1:1", nil)
	}})
	_, err := ts.proxy.Request(context.Background(), hostproxy.Req{Method: "Runtime.evaluate"})
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	assert.ErrorIs(t, err, browserbackend.ErrUnreachable)
}

func TestNew_RejectsBadOptions(t *testing.T) {
	_, err := New(Options{Dial: dialer(newFakeBrowser())})
	assert.ErrorContains(t, err, "bridge: ServerURL")
	_, err = New(Options{ServerURL: "ftp://x", Dial: dialer(newFakeBrowser())})
	assert.ErrorContains(t, err, "bridge: ServerURL")
	_, err = New(Options{ServerURL: "http://127.0.0.1:1"})
	assert.ErrorContains(t, err, "bridge: Dial")
	b, err := New(Options{ServerURL: "http://127.0.0.1:1/", Dial: dialer(newFakeBrowser())})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(b.ClientID(), "bridge-"))
	assert.Equal(t, wire.InterfaceMacOS, b.o.InterfaceID)
}

func TestBackoff_IsJitteredExponentialAndCapped(t *testing.T) {
	minD, maxD := 100*time.Millisecond, 3*time.Second
	for n := range 10 {
		base := min(minD<<n, maxD)
		for range 50 {
			d := backoff(n, minD, maxD)
			assert.GreaterOrEqual(t, d, base/2)
			assert.LessOrEqual(t, d, base)
		}
	}
}

func TestErrorContentFor_WireCodes(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{browserbackend.ProtocolError(-32000, "Cannot navigate"), `{"code":-32000,"message":"Cannot navigate"}`},
		{browserbackend.TransportError(browserbackend.CodeNonLoopback, "10.0.0.2 is not loopback", nil), `{"code":"non_loopback","message":"10.0.0.2 is not loopback"}`},
		{browserbackend.TransportError(browserbackend.CodeNonChrome, "not chrome", nil), `{"code":"transport_error","message":"non_chrome: not chrome"}`},
		{&browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeSessionNotFound, Message: "gone"}, `{"code":"cdp_session_not_found","message":"gone"}`},
		{context.DeadlineExceeded, `{"code":"timeout","message":"context deadline exceeded"}`},
		{browserbackend.Classify(context.DeadlineExceeded, false), `{"code":"unreachable","message":"deadline passed before the command was sent: context deadline exceeded"}`},
		{context.Canceled, `{"code":"cancelled","message":"context canceled"}`},
		{errors.New("boom"), `{"code":"transport_error","message":"boom"}`},
	}
	for _, tc := range cases {
		assert.JSONEq(t, tc.want, ErrorContentFor(tc.err))
		// And the server classifies it back into the same class.
		_, err := hostproxy.ClassifyResult("M", browserbackend.KindHostBridge, ErrorContentFor(tc.err), true)
		want := browserbackend.Classify(tc.err, true).Class
		if want == browserbackend.ClassTimeout || want == browserbackend.ClassAborted {
			// Reported by the browser side, not the caller's deadline or
			// cancellation: a transport error (PXY-6).
			want = browserbackend.ClassTransport
		}
		assert.ErrorIs(t, err, &browserbackend.Error{Class: want}, "%v", tc.err)
	}
}

func TestBridge_ReplayedRequestRunsOnce(t *testing.T) {
	ts := newTestServer(t, nil)
	br := newFakeBrowser()
	done := make(chan string, 8)
	b := runBridge(t, ts, Options{Dial: dialer(br), Hooks: Hooks{RequestDone: func(id, _, _ string, _ bool) { done <- id }}})
	publish := func(id, method string) {
		_, err := ts.hub.Publish(context.Background(), eventhub.Target{ClientID: b.ClientID()}, "",
			hostproxy.RequestMessage{Type: wire.TypeHostBrowserRequest, RequestID: id, CDPMethod: method})
		require.NoError(t, err)
	}
	publish("r1", "Count.inc")
	assert.Equal(t, "r1", <-done)
	publish("r1", "Count.inc") // the same request again, as a replay would deliver it
	publish("r2", "Echo.echo") // frames are handled in order: r1's replay is decided before r2 starts
	assert.Equal(t, "r2", <-done)
	assert.Equal(t, int64(1), br.counted.Load(), "a replayed request id is not executed twice")
}

func TestBridge_SilentStreamIsReopened(t *testing.T) {
	var (
		mu    sync.Mutex
		opens int
	)
	second := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		opens++
		n := opens
		mu.Unlock()
		if n == 2 {
			close(second)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // never a byte: a half-open or stuck stream
	}))
	defer srv.Close()
	b, err := New(Options{ServerURL: srv.URL, Dial: dialer(newFakeBrowser()), Logger: quiet(),
		IdleTimeout: 20 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- b.Run(ctx) }()
	<-second // the bridge gave up on the silent stream and reconnected
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
}

// A server that stops answering event posts must not hold the bridge's
// shutdown: releasing the browser ends the forwarder's posts at once, and
// the events still buffered are dropped.
func TestBridge_ShutdownDoesNotWaitForEventPostsToAStalledServer(t *testing.T) {
	stalled := make(chan struct{})   // closed when the test is done
	firstPost := make(chan struct{}) // closed when the first event post arrived
	var once sync.Once
	srv := hostproxytest.NewServer(t, hostproxytest.ServerOptions{Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == wire.PathHostBrowserEvent {
				once.Do(func() { close(firstPost) })
				select {
				case <-stalled:
				case <-r.Context().Done():
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}})
	defer close(stalled)

	br := newFakeBrowser()
	b, err := New(Options{ServerURL: srv.URL, Dial: dialer(br), Logger: quiet(), MinBackoff: 10 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	waitClient(t, srv.Hub, b.ClientID(), true)

	// One command makes the bridge dial the browser and start forwarding.
	be := srv.Proxy.NewHostBridgeBackend(browserbackend.Invocation{}, hostproxy.BackendOptions{})
	defer be.Close()
	_, err = be.Send(context.Background(), browserbackend.Command{Method: "Echo.echo"})
	require.NoError(t, err)
	for range 5 {
		br.bus.Publish(browserbackend.Event{Method: "Runtime.consoleAPICalled", Params: json.RawMessage(`{}`)})
	}
	<-firstPost // the forwarder is now stuck in a post the server never answers

	cancel()
	hang := time.NewTimer(20 * time.Second) // a hang guard, not a speed check
	defer hang.Stop()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-hang.C:
		t.Fatal("Run did not return while an event post was stalled")
	}
}

// TestBridge_ResultRefusedAsTooLargeIsReportedAsPayloadTooLarge: when the
// server refuses a result with 413, the bridge posts payload_too_large in
// its place, so the caller fails at once instead of timing out (WIRE-5).
func TestBridge_ResultRefusedAsTooLargeIsReportedAsPayloadTooLarge(t *testing.T) {
	const limit = 2048
	be := bridgeBehindResultFilter(t, time.Hour, func(w http.ResponseWriter, r *http.Request) bool {
		if r.ContentLength > limit {
			w.WriteHeader(http.StatusRequestEntityTooLarge) // a proxy in front with a smaller cap
			return true
		}
		return false
	})
	big, _ := json.Marshal(map[string]string{"data": strings.Repeat("x", 4*limit)})
	_, err := be.Send(context.Background(), browserbackend.Command{Method: "Echo.echo", Params: big})
	assert.ErrorIs(t, err, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodePayloadTooLarge})
}

// bridgeBehindResultFilter runs a bridge (client mac-1 of alice, over a
// fake browser) against a server whose result posts pass refuse first: one
// it answers (true) never reaches the server. It returns a host-bridge
// backend of alice with timeout, closed at the test's end.
func bridgeBehindResultFilter(t *testing.T, timeout time.Duration, refuse func(http.ResponseWriter, *http.Request) bool) browserbackend.ScopedClient {
	t.Helper()
	srv := hostproxytest.NewServer(t, hostproxytest.ServerOptions{Tokens: map[string]string{"tok": "alice"},
		Wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == wire.PathHostBrowserResult && refuse(w, r) {
					return
				}
				next.ServeHTTP(w, r)
			})
		}})
	ts := &testServer{Server: srv, hub: srv.Hub, proxy: srv.Proxy}
	runBridge(t, ts, Options{Token: "tok", ClientID: "mac-1", Dial: dialer(newFakeBrowser())})
	be := ts.proxy.NewHostBridgeBackend(browserbackend.Invocation{ActorPrincipalID: "alice"},
		hostproxy.BackendOptions{Timeout: timeout})
	t.Cleanup(func() { be.Close() })
	return be
}

// TestBridge_ResultRefusedByARateLimiterIsPostedAgain: a result the server
// refuses for the moment (429 with Retry-After, 503 without) is posted
// again until it is taken, so the caller gets its answer instead of
// waiting for its deadline (the runtime's limiter once dropped such
// results in the soak).
func TestBridge_ResultRefusedByARateLimiterIsPostedAgain(t *testing.T) {
	var refused atomic.Int32
	be := bridgeBehindResultFilter(t, time.Minute, func(w http.ResponseWriter, r *http.Request) bool {
		switch refused.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		case 2:
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	res, err := be.Send(context.Background(), browserbackend.Command{Method: "Echo.echo", Params: json.RawMessage(`{"v":1}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":1}`, string(res))
	assert.Equal(t, int32(3), refused.Load(), "two refusals, then the post that was taken")
}
