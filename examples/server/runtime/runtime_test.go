package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const origin = "chrome-extension://fnkhihckcobbnjjhjjacjdbbidilbmnl"

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newServer(t *testing.T, clk *clock, fallbacks ...browserbackend.Provider) (*runtime.Runtime, *httptest.Server) {
	t.Helper()
	cfg := runtime.Config{Key: bytes.Repeat([]byte("s"), 32), AllowedOrigins: []string{origin}, Fallbacks: fallbacks,
		SelectorOptions: browserbackend.Options{Grace: -1}}
	if clk != nil {
		cfg.Now = clk.Now
	}
	rt, err := runtime.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(rt.Handler) // 127.0.0.1
	t.Cleanup(func() { rt.Close(); srv.Close() })
	return rt, srv
}

func do(t *testing.T, srv *httptest.Server, method, path string, hdr map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestPairingOnTheComposedServer(t *testing.T) {
	_, srv := newServer(t, nil)
	ext := map[string]string{wire.HeaderInterfaceID: "chrome-extension", "Origin": origin}

	assert.Equal(t, http.StatusForbidden, do(t, srv, "POST", "/v1/pair", map[string]string{
		wire.HeaderInterfaceID: "chrome-extension", "Origin": origin, "X-Forwarded-For": "203.0.113.9"}, "{}").StatusCode)
	assert.Equal(t, http.StatusForbidden, do(t, srv, "POST", "/v1/pair", map[string]string{
		wire.HeaderInterfaceID: "chrome-extension", "Origin": origin, "Host": "attacker.example"}, "{}").StatusCode)
	assert.Equal(t, http.StatusForbidden, do(t, srv, "POST", "/v1/pair", map[string]string{
		wire.HeaderInterfaceID: "chrome-extension", "Origin": "chrome-extension://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}, "{}").StatusCode)
	assert.Equal(t, http.StatusBadRequest, do(t, srv, "POST", "/v1/pair", map[string]string{"Origin": origin}, "{}").StatusCode)
	for range 8 { // the origin and interface denials above count; the local-only ones are refused before the limiter
		assert.Equal(t, http.StatusOK, do(t, srv, "POST", "/v1/pair", ext, `{"clientId":"c1"}`).StatusCode)
	}
	resp := do(t, srv, "POST", "/v1/pair", ext, "{}")
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the 11th request within a minute")
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Equal(t, "10", resp.Header.Get("X-RateLimit-Limit"))
}

func TestEventsRefuseBadSignatureAndExpiredTokens(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	rt, srv := newServer(t, clk)
	other, err := auth.New(auth.Config{Key: bytes.Repeat([]byte("o"), 32), Now: clk.Now})
	require.NoError(t, err)
	forged, err := other.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1"})
	require.NoError(t, err)
	hdr := func(tok string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "X-Vellum-Client-Id": "c1",
			"X-Vellum-Interface-Id": "chrome-extension"}
	}
	assert.Equal(t, http.StatusUnauthorized, do(t, srv, "GET", "/v1/events", hdr(forged.Token), "").StatusCode)
	assert.Equal(t, http.StatusUnauthorized, do(t, srv, "GET", "/v1/events", nil, "").StatusCode)

	tok, err := rt.Auth.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1"})
	require.NoError(t, err)
	clk.Advance(25 * time.Hour)
	resp := do(t, srv, "GET", "/v1/events", hdr(tok.Token), "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	var body struct{ Error struct{ Code string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, "token_expired", body.Error.Code)
	// The result routes are behind the same middleware.
	assert.Equal(t, http.StatusUnauthorized, do(t, srv, "POST", "/v1/host-browser-result", hdr(tok.Token), `{"requestId":"x"}`).StatusCode)
}

func TestEventsStreamOpensWithAValidToken(t *testing.T) {
	rt, srv := newServer(t, nil)
	tok, err := rt.Auth.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	req.Header.Set("X-Vellum-Client-Id", "c1")
	req.Header.Set("X-Vellum-Interface-Id", "chrome-extension")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	c, ok := rt.Hub.Client("c1")
	require.True(t, ok)
	assert.Equal(t, auth.DefaultActor, c.ActorPrincipalID, "the actor comes from the token")
}

func TestCommandEndpointRunsOneCommandAndReportsAttempts(t *testing.T) {
	fake := &browserbackendtest.Provider{K: browserbackend.KindLocal, NewBackend: func() *browserbackendtest.Backend {
		return browserbackendtest.NewBackend(browserbackend.KindLocal, func(ctx context.Context, cmd browserbackend.Command) (json.RawMessage, error) {
			return json.RawMessage(`{"result":{"type":"number","value":2}}`), nil
		})
	}}
	_, srv := newServer(t, nil, fake)
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	resp := do(t, srv, "POST", runtime.CommandPath, jsonHdr,
		`{"conversationId":"c1","browser_mode":"auto","method":"Runtime.evaluate","params":{"expression":"1+1"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out runtime.CommandResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.Equal(t, browserbackend.KindLocal, out.Backend)
	assert.JSONEq(t, `{"result":{"type":"number","value":2}}`, string(out.Result))
	require.NotEmpty(t, out.Attempts)
	assert.Equal(t, browserbackend.KindExtension, out.Attempts[0].Kind, "the extension was considered and skipped")
	assert.Equal(t, browserbackend.StageSuccess, out.Attempts[len(out.Attempts)-1].Stage)

	resp = do(t, srv, "POST", runtime.CommandPath, jsonHdr, `{"browser_mode":"host-bridge","method":"Runtime.evaluate"}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "host-bridge is not a caller mode")

	resp = do(t, srv, "POST", runtime.CommandPath, jsonHdr, `{"browser_mode":"extension","method":"Runtime.evaluate","timeoutMs":100}`)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.Contains(t, out.Report, `Requested browser_mode "extension" is unavailable`)
}

func TestCommandEndpointRefusesWebPagesProxiesAndNonJSON(t *testing.T) {
	_, srv := newServer(t, nil)
	body := `{"method":"Runtime.evaluate"}`
	assert.Equal(t, http.StatusForbidden, do(t, srv, "POST", runtime.CommandPath,
		map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, body).StatusCode)
	assert.Equal(t, http.StatusUnsupportedMediaType, do(t, srv, "POST", runtime.CommandPath,
		map[string]string{"Content-Type": "text/plain"}, body).StatusCode)
	assert.Equal(t, http.StatusForbidden, do(t, srv, "POST", runtime.CommandPath,
		map[string]string{"Content-Type": "application/json", "X-Forwarded-For": "198.51.100.1"}, body).StatusCode)
	assert.Equal(t, http.StatusBadRequest, do(t, srv, "POST", runtime.CommandPath,
		map[string]string{"Content-Type": "application/json"}, `{"browser_mode":"auto"}`).StatusCode)
}

func TestCommandEndpointAnswersOversizedBodyWith413(t *testing.T) {
	_, srv := newServer(t, nil)
	big := `{"method":"Runtime.evaluate","params":{"x":"` + strings.Repeat("a", 2<<20) + `"}}`
	resp := do(t, srv, "POST", runtime.CommandPath, map[string]string{"Content-Type": "application/json"}, big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	var out runtime.CommandResponse
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotNil(t, out.Error)
	assert.Equal(t, "body_too_large", out.Error.Code)
}

// serveWithTimeouts runs rt.HTTPServer on 127.0.0.1 with short timeouts.
func serveWithTimeouts(t *testing.T, hubOpts ...eventhub.Option) (*runtime.Runtime, string) {
	t.Helper()
	rt, err := runtime.New(runtime.Config{Key: bytes.Repeat([]byte("s"), 32), AllowedOrigins: []string{origin},
		Logger: slog.New(slog.DiscardHandler), HubOptions: hubOpts,
		ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	srv := rt.HTTPServer("127.0.0.1:0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	t.Cleanup(func() { rt.Close(); _ = srv.Close(); <-served })
	return rt, ln.Addr().String()
}

// readUntilServerCloses reads conn until the server closes it; a guard
// deadline (only against a broken server) turns a hang into a failure.
func readUntilServerCloses(t *testing.T, conn net.Conn) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	b, err := io.ReadAll(conn)
	require.NoError(t, err, "the server kept the connection open")
	return string(b)
}

func TestHTTPServerCutsOffSlowBodiesAndIdleConnections(t *testing.T) {
	_, addr := serveWithTimeouts(t)
	for _, path := range []string{"/v1/pair", runtime.CommandPath, wire.PathHostBrowserResult} {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		// Headers promise 100 bytes; one arrives and the rest never do.
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Vellum-Interface-Id: macos\r\n"+
			"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{", path)
		require.NoError(t, err)
		readUntilServerCloses(t, conn)
	}

	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/pair HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Vellum-Interface-Id: macos\r\nContent-Length: 2\r\n\r\n{}")
	require.NoError(t, err)
	// One complete request, then the connection idles: the server answers
	// and then closes it.
	assert.Contains(t, readUntilServerCloses(t, conn), "200 OK")
}

func TestHTTPServerReadTimeoutLeavesEventsStreamOpen(t *testing.T) {
	rt, addr := serveWithTimeouts(t, eventhub.WithHeartbeatInterval(300*time.Millisecond))
	tok, err := rt.Auth.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	req.Header.Set("X-Vellum-Client-Id", "c1")
	req.Header.Set("X-Vellum-Interface-Id", "chrome-extension")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The heartbeat at once, then three periodic ones: the stream lives on
	// past several read timeouts.
	beats := 0
	for f, err := range eventhub.ReadFrames(resp.Body, 0) {
		require.NoError(t, err)
		if _, ok := f.HeartbeatToken(); ok {
			if beats++; beats == 4 {
				break
			}
		}
	}
	assert.Equal(t, 4, beats)
	_, ok := rt.Hub.Client("c1")
	assert.True(t, ok)
}

func TestHTTPServerReadTimeoutLeavesResultSocketOpen(t *testing.T) {
	rt, addr := serveWithTimeouts(t, eventhub.WithHeartbeatInterval(300*time.Millisecond))
	tok, err := rt.Auth.Mint(auth.Grant{InterfaceID: "chrome-extension", ClientID: "c1"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // against a hang only
	defer cancel()
	stream, err := eventhubtest.Dial(ctx, "http://"+addr+wire.PathEvents, eventhubtest.DialOptions{ClientID: "c1",
		InterfaceID: "chrome-extension", Header: http.Header{"Authorization": {"Bearer " + tok.Token}}})
	require.NoError(t, err)
	defer stream.Close()
	sock, _, err := websocket.Dial(ctx, "ws://"+addr+wire.PathHostBrowserResultSocket, nil)
	require.NoError(t, err)
	defer sock.CloseNow()
	require.NoError(t, wsjson.Write(ctx, sock, map[string]string{"type": "auth", "token": tok.Token, "clientId": "c1"}))
	var reply map[string]any
	require.NoError(t, wsjson.Read(ctx, sock, &reply))
	require.Equal(t, "ready", reply["type"])
	// Several read timeouts pass while the socket is idle.
	for range 4 {
		_, _, err := stream.NextHeartbeat(ctx)
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := rt.Proxy.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", TargetClientID: "c1"})
		done <- err
	}()
	env, err := stream.NextEvent(ctx)
	require.NoError(t, err)
	var msg hostproxy.RequestMessage
	require.NoError(t, json.Unmarshal(env.Message, &msg))
	require.NoError(t, wsjson.Write(ctx, sock, map[string]any{"type": "result", "requestId": msg.RequestID, "content": "{}"}))
	require.NoError(t, wsjson.Read(ctx, sock, &reply))
	assert.Equal(t, "accepted", reply["type"])
	assert.NoError(t, <-done)
}

// The runtime installs the proxy's replay filter in its hub: a request whose
// caller failed on the client's disconnect is not replayed when the client
// reconnects with its Last-Event-ID (HUB-3, HUB-5), so the client never runs
// a command its caller may already have run on another browser.
func TestRuntime_ReconnectDoesNotReplayARequestWhoseCallerFailedOnTheDisconnect(t *testing.T) {
	rt, _ := newServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a broken test only
	defer cancel()
	req := eventhub.SubscribeRequest{ClientID: "ext-1", InterfaceID: wire.InterfaceChromeExtension,
		Actor: rt.Auth.ActorPrincipalID()}
	sub1, err := rt.Hub.Subscribe(req)
	require.NoError(t, err)
	_, err = rt.Hub.Publish(ctx, eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	marker, err := sub1.Next(ctx)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := rt.Proxy.Request(ctx, hostproxy.Req{Method: "Input.dispatchMouseEvent", TargetClientID: "ext-1",
			Timeout: time.Hour})
		errc <- err
	}()
	env, err := sub1.Next(ctx) // reaches the stream, never processed
	require.NoError(t, err)
	require.Contains(t, string(env.Message), wire.TypeHostBrowserRequest)
	sub1.Close()
	require.ErrorIs(t, <-errc, browserbackend.ErrTransport)

	req.LastEventID = marker.ID
	sub2, err := rt.Hub.Subscribe(req)
	require.NoError(t, err)
	defer sub2.Close()
	_, err = rt.Hub.Publish(ctx, eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "after"})
	require.NoError(t, err)
	env, err = sub2.Next(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"after"}`, string(env.Message), "the failed request is not replayed")
}
