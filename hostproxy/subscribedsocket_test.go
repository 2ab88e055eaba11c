package hostproxy_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// subWorld is a proxy on the real in-process hub whose result socket offers
// (or, with offer false, does not offer) the subscribed mode.
type subWorld struct {
	hub   *eventhub.InProcess
	proxy *hostproxy.Proxy
	srv   *httptest.Server
}

func newSubWorld(t *testing.T, offer bool) *subWorld { return newCappedSubWorld(t, offer, 0) }

// newCappedSubWorld is newSubWorld with the proxy's MaxBodyBytes (0: the
// default).
func newCappedSubWorld(t *testing.T, offer bool, maxBody int64) *subWorld {
	t.Helper()
	w := &subWorld{hub: eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))}
	w.proxy = hostproxy.New(hostproxy.Options{Hub: w.hub, Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: maxBody})
	so := hostproxy.SocketOptions{Verify: func(_ context.Context, token, _, iface string) (string, string, error) {
		return strings.TrimPrefix(token, "tok-"), iface, nil
	}}
	if offer {
		so.Subscriber = w.hub
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+wire.PathHostBrowserResultSocket, w.proxy.ResultSocketHandler(so))
	w.srv = httptest.NewServer(mux)
	t.Cleanup(func() { w.proxy.Close(); w.srv.Close(); w.hub.Close() })
	return w
}

// connect dials, sends an auth message asking for the subscribed mode and
// returns the socket and the ready reply.
func (w *subWorld) connect(t *testing.T, clientID string) (*websocket.Conn, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.srv.URL, "http")+wire.PathHostBrowserResultSocket, nil)
	require.NoError(t, err)
	t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(1 << 20)
	write(t, c, map[string]any{"type": wire.SocketAuth, "token": "tok-alice", "clientId": clientID, "subscribe": true})
	return c, read(t, c)
}

func write(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Write(ctx, websocket.MessageText, data))
}

func read(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	_, data, err := c.Read(ctx)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// nextHubMessage reads frames until an assistant_event and returns its
// message.
func nextHubMessage(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	for {
		f := read(t, c)
		if f["type"] != wire.RemoteEnvelope {
			continue
		}
		ev, _ := json.Marshal(f["event"])
		var env eventhub.Envelope
		require.NoError(t, json.Unmarshal(ev, &env))
		require.NotEmpty(t, env.ID, "the envelope keeps its id (the client's Last-Event-ID)")
		var m map[string]any
		require.NoError(t, json.Unmarshal(env.Message, &m))
		return m
	}
}

func TestSubscribedSocket_CarriesRequestsCancelsResultsAndEvents(t *testing.T) {
	w := newSubWorld(t, true)
	c, ready := w.connect(t, "ext-1")
	assert.Equal(t, map[string]any{"type": wire.SocketReady, "clientId": "ext-1", "subscribed": true, "maxBodyBytes": float64(hostproxy.DefaultMaxBodyBytes)}, ready)
	info, ok := w.hub.Client("ext-1")
	require.True(t, ok, "the socket registered the client")
	assert.Equal(t, wire.InterfaceChromeExtension, info.InterfaceID)
	assert.Equal(t, "alice", info.ActorPrincipalID)

	// A request and its result.
	be := w.proxy.NewExtensionBackend(browserbackend.Invocation{ConversationID: "conv", ActorPrincipalID: "alice",
		TargetClientID: "ext-1"}, hostproxy.BackendOptions{})
	defer be.Close()
	events, stop := be.Subscribe("")
	defer stop()
	type out struct {
		res json.RawMessage
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := be.Send(context.Background(), browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1+1"}`), SessionID: "7"})
		done <- out{res, err}
	}()
	req := nextHubMessage(t, c)
	require.Equal(t, wire.TypeHostBrowserRequest, req["type"])
	id := req["requestId"].(string)
	write(t, c, map[string]any{"type": wire.SocketResult, "requestId": id, "content": `{"result":{"value":2}}`, "isError": false})
	assert.Equal(t, map[string]any{"type": wire.SocketAccepted, "requestId": id}, read(t, c))
	r := <-done
	require.NoError(t, r.err)
	assert.JSONEq(t, `{"result":{"value":2}}`, string(r.res))

	// An event frame naming the backend's tab reaches its subscribers; it
	// gets no reply.
	write(t, c, map[string]any{"type": wire.RemoteEvent, "method": "Page.loadEventFired", "params": map[string]any{"timestamp": 1}, "tabId": "7"})
	select {
	case ev := <-events:
		assert.Equal(t, "Page.loadEventFired", ev.Method)
	case <-time.After(10 * time.Second): // against a hang only
		t.Fatal("the event did not arrive")
	}

	// A cancel: the caller gives up, the client is told.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := be.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"2"}`)})
		done <- out{err: err}
	}()
	req = nextHubMessage(t, c)
	require.Equal(t, wire.TypeHostBrowserRequest, req["type"])
	cancel()
	cm := nextHubMessage(t, c)
	assert.Equal(t, wire.TypeHostBrowserCancel, cm["type"])
	assert.Equal(t, req["requestId"], cm["requestId"])
	assert.ErrorIs(t, (<-done).err, browserbackend.ErrAborted)

	// Refusals: an event without a method, a frame for another client, an
	// unknown type.
	write(t, c, map[string]any{"type": wire.RemoteEvent})
	assert.Equal(t, "missing_method", read(t, c)["code"])
	write(t, c, map[string]any{"type": wire.RemoteEvent, "method": "Page.loadEventFired", "clientId": "ext-2"})
	assert.Equal(t, "client_mismatch", read(t, c)["code"])
	write(t, c, map[string]any{"type": "subscribe"})
	assert.Equal(t, "bad_type", read(t, c)["code"])

	// The socket's end ends the registration.
	gone := w.hub.Gone("ext-1")
	c.Close(websocket.StatusNormalClosure, "")
	select {
	case <-gone:
	case <-time.After(10 * time.Second): // against a hang only
		t.Fatal("the registration outlived its socket")
	}
}

func TestSubscribedSocket_AServerThatDoesNotOfferItAnswersReadyForResultsOnly(t *testing.T) {
	w := newSubWorld(t, false)
	c, ready := w.connect(t, "ext-1")
	assert.Equal(t, map[string]any{"type": wire.SocketReady, "clientId": "ext-1", "maxBodyBytes": float64(hostproxy.DefaultMaxBodyBytes)}, ready, "no subscribed field")
	_, ok := w.hub.Client("ext-1")
	assert.False(t, ok, "the socket registered nothing")
	write(t, c, map[string]any{"type": wire.RemoteEvent, "method": "Page.loadEventFired"})
	assert.Equal(t, "bad_type", read(t, c)["code"], "a results-only socket takes results only")
}

func TestSubscribedSocket_ANewerStreamOfTheClientClosesTheSocket(t *testing.T) {
	w := newSubWorld(t, true)
	c, _ := w.connect(t, "ext-1")
	sub, err := w.hub.Subscribe(eventhub.SubscribeRequest{ClientID: "ext-1", InterfaceID: wire.InterfaceChromeExtension, Actor: "alice"})
	require.NoError(t, err)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	for {
		if _, _, err = c.Read(ctx); err != nil {
			break
		}
	}
	assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err))
}

// TestSubscribedSocket_AFrameOverTheCapFailsItsCommandAsPayloadTooLarge: a
// client that ignores maxBodyBytes loses the socket (1009); the result it
// sent fails its command at once with payload_too_large and the client's
// other command in flight fails with a transport error, not at their
// deadline (an hour away).
func TestSubscribedSocket_AFrameOverTheCapFailsItsCommandAsPayloadTooLarge(t *testing.T) {
	w := newCappedSubWorld(t, true, 4096)
	c, ready := w.connect(t, "ext-1")
	assert.Equal(t, float64(4096), ready["maxBodyBytes"])
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := w.proxy.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", TargetClientID: "ext-1", Timeout: time.Hour})
			errs <- err
		}()
	}
	first, second := nextHubMessage(t, c), nextHubMessage(t, c)
	require.NotEqual(t, first["requestId"], second["requestId"])
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	require.NoError(t, c.Write(wctx, websocket.MessageText, []byte(`{"type":"result","requestId":"`+first["requestId"].(string)+
		`","content":"`+strings.Repeat("x", 8192)+`","isError":false}`)))
	_, _, err := c.Read(wctx)
	assert.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err), err)
	got := hostproxytest.CodesByClass(t, errs, 2)
	assert.Equal(t, map[browserbackend.Class]string{
		browserbackend.ClassProtocol:  browserbackend.CodePayloadTooLarge,
		browserbackend.ClassTransport: browserbackend.CodeTransportError,
	}, got)
}

// TestSubscribedSocket_ALargeResultArrivesExactly: a result frame large
// enough for the fast decoder (escapes, non-ASCII text) reaches its caller
// byte for byte, and the next frame read into the socket's buffer does not
// change it.
func TestSubscribedSocket_ALargeResultArrivesExactly(t *testing.T) {
	w := newSubWorld(t, true)
	c, _ := w.connect(t, "ext-1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type out struct {
		res json.RawMessage
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := w.proxy.Request(ctx, hostproxy.Req{Method: "Page.captureScreenshot", TargetClientID: "ext-1"})
		done <- out{res, err}
	}()
	req := nextHubMessage(t, c)
	content, _ := json.Marshal(map[string]string{"data": strings.Repeat("QUJD\"\\é\n", 40<<10)})
	write(t, c, map[string]any{"type": wire.SocketResult, "requestId": req["requestId"], "content": string(content), "isError": false})
	assert.Equal(t, wire.SocketAccepted, read(t, c)["type"])
	write(t, c, map[string]any{"type": wire.SocketResult, "requestId": "nope", "content": strings.Repeat("z", 200<<10)})
	assert.Equal(t, "unknown_request", read(t, c)["code"])
	o := <-done
	require.NoError(t, o.err)
	assert.Equal(t, string(content), string(o.res))
}
