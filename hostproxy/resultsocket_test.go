package hostproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testOrigin = "chrome-extension://fnkhihckcobbnjjhjjacjdbbidilbmnl"

// testVerify accepts "tok-<actor>" for any client id except "unbound-…".
func testVerify(_ context.Context, token, _, iface string) (string, string, error) {
	actor, ok := strings.CutPrefix(token, "tok-")
	if !ok || actor == "" {
		return "", "", errors.New("hostproxy test: token rejected")
	}
	return actor, iface, nil
}

type socketFixture struct {
	h        *fakeHub
	p        *Proxy
	srv      *httptest.Server
	mu       sync.Mutex
	receipts []ResultReceipt
}

func newSocketFixture(t *testing.T, maxBody int64, so SocketOptions) *socketFixture {
	t.Helper()
	f := &socketFixture{h: newFakeHub()}
	f.p = New(Options{Hub: f.h, Logger: quietLogger(), MaxBodyBytes: maxBody, OnResult: func(r ResultReceipt) {
		f.mu.Lock()
		defer f.mu.Unlock()
		r.Raw = nil
		f.receipts = append(f.receipts, r)
	}})
	if so.Verify == nil {
		so.Verify = testVerify
	}
	if so.AllowedOrigins == nil {
		so.AllowedOrigins = []string{testOrigin}
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+wire.PathHostBrowserResultSocket, f.p.ResultSocketHandler(so))
	mux.Handle("POST "+wire.PathHostBrowserResult, f.p.resultHandler())
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() { f.p.Close(); f.srv.Close() })
	return f
}

func (f *socketFixture) transports() []Transport {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Transport
	for _, r := range f.receipts {
		out = append(out, r.Transport)
	}
	return out
}

func (f *socketFixture) dial(t *testing.T, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	hdr := http.Header{}
	if origin != "" {
		hdr.Set("Origin", origin)
	}
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+wire.PathHostBrowserResultSocket,
		&websocket.DialOptions{HTTPHeader: hdr})
	if c != nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// connect dials and authenticates as clientID with token; it requires the
// ready message.
func (f *socketFixture) connect(t *testing.T, token, clientID string) *websocket.Conn {
	t.Helper()
	c, _, err := f.dial(t, testOrigin)
	require.NoError(t, err)
	send(t, c, map[string]any{"type": wire.SocketAuth, "token": token, "clientId": clientID})
	m := recv(t, c)
	require.Equal(t, wire.SocketReady, m["type"], m)
	require.Equal(t, clientID, m["clientId"])
	return c
}

func send(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Write(ctx, websocket.MessageText, data))
}

func recv(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	m, err := recvErr(c)
	require.NoError(t, err)
	return m
}

func recvErr(c *websocket.Conn) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(data, &m)
	return m, err
}

func result(id, content string) map[string]any {
	return map[string]any{"type": wire.SocketResult, "requestId": id, "content": content, "isError": false, "durationMs": 0.7}
}

func TestResultSocket_ResultCompletesTheRequestAndCountsAsActivity(t *testing.T) {
	f := newSocketFixture(t, 0, SocketOptions{})
	ext := f.h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	c := f.connect(t, "tok-alice", "ext")

	msg, done := startRequest(t, context.Background(), f.p, Req{Method: "Runtime.evaluate", TargetClientID: "ext"}, ext)
	id := msg["requestId"].(string)
	send(t, c, result(id, `{"result":{"type":"number","value":2}}`))
	assert.Equal(t, map[string]any{"type": wire.SocketAccepted, "requestId": id}, recv(t, c))
	out := <-done
	require.NoError(t, out.err)
	assert.JSONEq(t, `{"result":{"type":"number","value":2}}`, string(out.res))
	assert.Equal(t, []Transport{TransportWebSocket}, f.transports())
	f.h.mu.Lock()
	assert.Contains(t, f.h.touched, "ext")
	f.h.mu.Unlock()
}

func TestResultSocket_ResultFromAnotherClientOrActorIs403AndTheRightClientStillCompletes(t *testing.T) {
	f := newSocketFixture(t, 0, SocketOptions{})
	ext := f.h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	f.h.add("other", wire.InterfaceChromeExtension, "alice", t0)
	msg, done := startRequest(t, context.Background(), f.p, Req{Method: "Page.navigate", TargetClientID: "ext"}, ext)
	id := msg["requestId"].(string)

	for _, tc := range []struct{ token, client, code string }{
		{"tok-alice", "other", "client_mismatch"}, // another client of the same actor
		{"tok-mallory", "ext", "wrong_actor"},     // the right client id, another actor's token
	} {
		c := f.connect(t, tc.token, tc.client)
		send(t, c, result(id, `{"frameId":"EVIL"}`))
		m := recv(t, c)
		assert.Equal(t, wire.SocketError, m["type"])
		assert.Equal(t, id, m["requestId"])
		assert.Equal(t, float64(http.StatusForbidden), m["status"])
		assert.Equal(t, tc.code, m["code"])
		_, pending := f.p.Interactions().Lookup(id)
		require.True(t, pending, "a refused message must not consume the request")
		// The socket stays usable after a refusal.
		send(t, c, result("nope", "{}"))
		assert.Equal(t, float64(http.StatusNotFound), recv(t, c)["status"])
	}

	c := f.connect(t, "tok-alice", "ext")
	send(t, c, result(id, `{"frameId":"F"}`))
	assert.Equal(t, wire.SocketAccepted, recv(t, c)["type"])
	out := <-done
	require.NoError(t, out.err)
	assert.JSONEq(t, `{"frameId":"F"}`, string(out.res))
}

func TestResultSocket_MalformedOrUntypedMessagesAreAnswered400AndTheSocketStaysOpen(t *testing.T) {
	f := newSocketFixture(t, 0, SocketOptions{})
	ext := f.h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	c := f.connect(t, "tok-alice", "ext")
	msg, done := startRequest(t, context.Background(), f.p, Req{Method: "Page.navigate", TargetClientID: "ext"}, ext)
	id := msg["requestId"].(string)

	require.NoError(t, c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"result",`)))
	m := recv(t, c)
	assert.Equal(t, "malformed_body", m["code"])
	send(t, c, map[string]any{"type": "event", "requestId": id, "content": "{}"})
	m = recv(t, c)
	assert.Equal(t, "bad_type", m["code"])
	send(t, c, map[string]any{"type": wire.SocketResult, "content": "{}"})
	assert.Equal(t, "missing_request_id", recv(t, c)["code"])
	_, pending := f.p.Interactions().Lookup(id)
	require.True(t, pending)

	send(t, c, result(id, `{}`))
	assert.Equal(t, wire.SocketAccepted, recv(t, c)["type"])
	require.NoError(t, (<-done).err)
}

func TestResultSocket_BadFirstMessageClosesWithPolicyViolation(t *testing.T) {
	f := newSocketFixture(t, 0, SocketOptions{})
	for name, first := range map[string]string{
		"garbage":            `hello`,
		"result before auth": `{"type":"result","requestId":"r1","content":"{}"}`,
		"rejected token":     `{"type":"auth","token":"forged","clientId":"ext"}`,
		"no client id":       `{"type":"auth","token":"tok-alice"}`,
		"no token":           `{"type":"auth","clientId":"ext"}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, _, err := f.dial(t, testOrigin)
			require.NoError(t, err)
			require.NoError(t, c.Write(context.Background(), websocket.MessageText, []byte(first)))
			_, err = recvErr(c)
			require.Error(t, err)
			assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), err)
		})
	}
}

func TestResultSocket_NoAuthMessageBeforeTheDeadlineClosesWithPolicyViolation(t *testing.T) {
	f := newSocketFixture(t, 0, SocketOptions{AuthTimeout: time.Millisecond})
	c, _, err := f.dial(t, testOrigin)
	require.NoError(t, err)
	_, err = recvErr(c) // the client sends nothing
	assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), err)
}

func TestResultSocket_HandshakeFromAnOriginNotAllowedIs403(t *testing.T) {
	f := newSocketFixture(t, 0, SocketOptions{})
	for _, o := range []string{
		"chrome-extension://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		"https://evil.example",
		"https://fnkhihckcobbnjjhjjacjdbbidilbmnl", // the right id under another scheme
		f.srv.URL, // even the server's own origin: no web page may post results
	} {
		c, resp, err := f.dial(t, o)
		require.Error(t, err, o)
		assert.Nil(t, c)
		require.NotNil(t, resp, o)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, o)
	}
	c, _, err := f.dial(t, testOrigin)
	require.NoError(t, err)
	c.Close(websocket.StatusNormalClosure, "")
}

func TestResultSocket_NonLoopbackPeerIsRefusedWhenLoopbackOnly(t *testing.T) {
	p := New(Options{Hub: newFakeHub(), Logger: quietLogger()})
	defer p.Close()
	h := p.ResultSocketHandler(SocketOptions{Verify: testVerify, LoopbackOnly: true})
	r := httptest.NewRequest(http.MethodGet, wire.PathHostBrowserResultSocket, nil)
	r.RemoteAddr = "203.0.113.7:4444"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	assert.Equal(t, http.StatusForbidden, rec.Code)
	assert.Contains(t, rec.Body.String(), "local_only")
}

func TestResultSocket_OversizedMessageClosesWithMessageTooBigAndLeavesTheRequestPending(t *testing.T) {
	f := newSocketFixture(t, 4096, SocketOptions{})
	ext := f.h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	c := f.connect(t, "tok-alice", "ext")
	msg, done := startRequest(t, context.Background(), f.p, Req{Method: "Page.captureScreenshot", TargetClientID: "ext"}, ext)
	id := msg["requestId"].(string)

	send(t, c, result(id, `{"data":"`+strings.Repeat("A", 8192)+`"}`))
	_, err := recvErr(c)
	assert.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err), err)
	_, pending := f.p.Interactions().Lookup(id)
	require.True(t, pending)

	// Closing the socket affected nothing pending: a POST still completes it.
	body, _ := json.Marshal(ResultBody{RequestID: id, Content: `{"data":"small"}`})
	rec := post(f.p.resultHandler(), "ext", "alice", body)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, (<-done).err)
	assert.Equal(t, []Transport{TransportHTTP}, f.transports())
}

func TestResultSocket_ProxyCloseClosesTheSocket(t *testing.T) {
	f := newSocketFixture(t, 0, SocketOptions{})
	c := f.connect(t, "tok-alice", "ext")
	f.p.Close()
	_, err := recvErr(c)
	assert.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), err)
}
