package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy"
)

// vellumDevOrigin is the origin of the Vellum extension's dev build.
const vellumDevOrigin = "chrome-extension://kajfcoaefacmjgdaloeafnpcfaeahcio"

const vellumClient = "3f0c9a51-6d3e-4c1b-9a57-0e2f4b1d7c88"

func newWireServer(t *testing.T, tune ...func(*runtime.Config)) (*runtime.Runtime, *httptest.Server, *browserbackendtest.LogRecorder) {
	t.Helper()
	rec, log := browserbackendtest.NewLogRecorder()
	cfg := runtime.Config{Key: bytes.Repeat([]byte("w"), 32),
		AllowedOrigins: []string{origin, vellumDevOrigin}, Logger: log,
		SelectorOptions: browserbackend.Options{Grace: -1}}
	for _, f := range tune {
		f(&cfg)
	}
	rt, err := runtime.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(rt.Handler)
	t.Cleanup(func() { rt.Close(); srv.Close() })
	return rt, srv, rec
}

// pairLikeVellum pairs the way the real extension does: an empty body that
// still says application/json, its Origin, no client id.
func pairLikeVellum(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	resp := do(t, srv, "POST", "/v1/pair", map[string]string{"Content-Type": "application/json",
		"X-Vellum-Interface-Id": "chrome-extension", "Origin": vellumDevOrigin, "Sec-Fetch-Site": "none"}, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var tok struct{ Token string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	require.NotEmpty(t, tok.Token)
	return tok.Token
}

func subscribeLikeVellum(t *testing.T, srv *httptest.Server, token string) *eventhubtest.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := eventhubtest.Dial(ctx, srv.URL+"/v1/events", eventhubtest.DialOptions{ClientID: vellumClient,
		InterfaceID: "chrome-extension", Header: http.Header{"Authorization": {"Bearer " + token}}})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// TestWire1_EventAndInvalidationWithOnlyABearerTokenReachTheBackend: the
// real extension names its client on the events stream only; its event and
// invalidation posts carry just the token (and the invalidation a clientId
// in its body).
func TestWire1_EventAndInvalidationWithOnlyABearerTokenReachTheBackend(t *testing.T) {
	rt, srv, rec := newWireServer(t)
	token := pairLikeVellum(t, srv)
	stream := subscribeLikeVellum(t, srv, token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a broken test only
	defer cancel()

	b := rt.Proxy.NewExtensionBackend(browserbackend.Invocation{ConversationID: "conv", TargetClientID: vellumClient,
		ActorPrincipalID: rt.Auth.ActorPrincipalID()}, hostproxy.BackendOptions{})
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		_, err := b.Send(ctx, browserbackend.Command{Method: "Page.enable"})
		done <- err
	}()
	env, err := stream.NextEvent(ctx)
	require.NoError(t, err)
	var msg hostproxy.RequestMessage
	require.NoError(t, json.Unmarshal(env.Message, &msg))
	post := func(path string, hdr map[string]string, body string) int {
		h := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token,
			"Origin": vellumDevOrigin, "Sec-Fetch-Site": "none"}
		for k, v := range hdr {
			h[k] = v
		}
		return do(t, srv, "POST", path, h, body).StatusCode
	}
	require.Equal(t, http.StatusOK, post(wire.PathHostBrowserResult, map[string]string{"X-Vellum-Client-Id": vellumClient},
		`{"requestId":"`+msg.RequestID+`","content":"{}","isError":false}`))
	require.NoError(t, <-done)

	events, stop := b.Subscribe("")
	defer stop()
	assert.Equal(t, http.StatusOK, post(wire.PathHostBrowserEvent, nil,
		`{"type":"host_browser_event","method":"Page.loadEventFired","params":{"timestamp":1}}`))
	assert.Equal(t, http.StatusOK, post(wire.PathHostBrowserSessionInvalidated, nil,
		`{"type":"host_browser_session_invalidated","targetId":"42","reason":"tab_closed","clientId":"`+vellumClient+`"}`))
	ev := <-events
	assert.Equal(t, "Page.loadEventFired", ev.Method)
	ev = <-events
	assert.Equal(t, browserbackend.MethodTargetDetached, ev.Method)
	assert.JSONEq(t, `{"targetId":"42","reason":"tab_closed"}`, string(ev.Params))

	// An invalidation naming another client than the token's is refused and
	// logged once, with the route, the code and the client, never the token.
	assert.Equal(t, http.StatusForbidden, post(wire.PathHostBrowserSessionInvalidated, nil,
		`{"targetId":"42","reason":"tab_closed","clientId":"someone-else"}`))
	refused := rec.Find("host_browser post refused")
	require.Len(t, refused, 1)
	assert.Equal(t, wire.PathHostBrowserSessionInvalidated, refused[0].Attrs["route"])
	assert.Equal(t, "client_mismatch", refused[0].Attrs["code"])
	assert.Equal(t, vellumClient, refused[0].Attrs["clientId"])
	assertNoTokenLogged(t, rec, token)
}

// TestWire1_EveryRejectedPostIsLoggedOnceWithRouteCodeAndClient covers the
// refusals of the auth middleware and of the proxy's routes.
func TestWire1_EveryRejectedPostIsLoggedOnceWithRouteCodeAndClient(t *testing.T) {
	_, srv, rec := newWireServer(t)
	token := pairLikeVellum(t, srv)
	bearer := map[string]string{"Authorization": "Bearer " + token, "X-Vellum-Client-Id": vellumClient}
	cases := []struct {
		path, body, code string
		hdr              map[string]string
		status           int
	}{
		{wire.PathHostBrowserEvent, `{"method":"Page.loadEventFired"}`, "missing_token", nil, http.StatusUnauthorized},
		{wire.PathHostBrowserEvent, `{"method":"Page.loadEventFired"}`, "unknown_client", bearer, http.StatusNotFound},
		{wire.PathHostBrowserEvent, `{"params":{}}`, "malformed_body", bearer, http.StatusBadRequest},
		{wire.PathHostBrowserResult, `{"requestId":"nope","content":"{}"}`, "unknown_request", bearer, http.StatusNotFound},
		{wire.PathHostBrowserSessionInvalidated, `{"targetId":"1"}`, "unknown_client", bearer, http.StatusNotFound},
	}
	for i, c := range cases {
		before := len(rec.Records())
		resp := do(t, srv, "POST", c.path, c.hdr, c.body)
		require.Equal(t, c.status, resp.StatusCode, "case %d", i)
		var warns []browserbackendtest.Record
		for _, r := range rec.Records()[before:] {
			if r.Level >= 4 { // slog.LevelWarn
				warns = append(warns, r)
			}
		}
		require.Len(t, warns, 1, "case %d: one warn line per refusal", i)
		assert.Equal(t, c.path, warns[0].Attrs["route"], "case %d", i)
		assert.Equal(t, c.code, warns[0].Attrs["code"], "case %d", i)
		if c.hdr != nil {
			assert.Equal(t, vellumClient, warns[0].Attrs["clientId"], "case %d", i)
		}
	}
	assertNoTokenLogged(t, rec, token)
}

func assertNoTokenLogged(t *testing.T, rec *browserbackendtest.LogRecorder, token string) {
	t.Helper()
	for _, r := range rec.Records() {
		for k, v := range r.Attrs {
			if s, ok := v.(string); ok && strings.Contains(s, token[len(token)-20:]) {
				t.Errorf("log %q attr %s holds the token", r.Message, k)
			}
		}
	}
}

// TestWire7_WebPagesAreRefusedEvenWithAValidToken: a valid token from a web
// page (cross-site fetch metadata, or a web Origin) opens nothing; the
// extension's own origin is accepted.
func TestWire7_WebPagesAreRefusedEvenWithAValidToken(t *testing.T) {
	_, srv, _ := newWireServer(t)
	token := pairLikeVellum(t, srv)
	stream := subscribeLikeVellum(t, srv, token) // so the event routes know the client
	_ = stream
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/events", ""},
		{"POST", wire.PathHostBrowserResult, `{"requestId":"x","content":"{}"}`},
		{"POST", wire.PathHostBrowserEvent, `{"method":"Page.loadEventFired"}`},
		{"POST", wire.PathHostBrowserSessionInvalidated, `{"targetId":"1","clientId":"` + vellumClient + `"}`},
	}
	for _, rt := range routes {
		for _, web := range []map[string]string{
			{"Sec-Fetch-Site": "cross-site"},
			{"Origin": "https://evil.test"},
			{"Origin": "chrome-extension://bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
			{"Origin": "null"},
		} {
			hdr := map[string]string{"Authorization": "Bearer " + token, "X-Vellum-Client-Id": vellumClient,
				"X-Vellum-Interface-Id": "chrome-extension"}
			for k, v := range web {
				hdr[k] = v
			}
			assert.Equal(t, http.StatusForbidden, do(t, srv, rt.method, rt.path, hdr, rt.body).StatusCode, "%s %s %v", rt.method, rt.path, web)
		}
	}
	// The extension's own origin passes auth: the event is accepted, the
	// unknown result id reaches the route (404), not a 403.
	ok := map[string]string{"Authorization": "Bearer " + token, "Origin": vellumDevOrigin, "Sec-Fetch-Site": "none"}
	assert.Equal(t, http.StatusOK, do(t, srv, "POST", wire.PathHostBrowserEvent, ok, `{"method":"Page.loadEventFired"}`).StatusCode)
	ok["X-Vellum-Client-Id"] = vellumClient
	assert.Equal(t, http.StatusNotFound, do(t, srv, "POST", wire.PathHostBrowserResult, ok, `{"requestId":"x","content":"{}"}`).StatusCode)
}

// vellumPost posts body to path with the headers the real extension sends
// there (the client id only on results).
func vellumPost(t *testing.T, srv *httptest.Server, token, path, body string) int {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token,
		"Origin": vellumDevOrigin, "Sec-Fetch-Site": "none"}
	if path == wire.PathHostBrowserResult {
		h["X-Vellum-Client-Id"] = vellumClient
	}
	req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func nextRequest(t *testing.T, ctx context.Context, s *eventhubtest.Stream) hostproxy.RequestMessage {
	t.Helper()
	for {
		env, err := s.NextEvent(ctx)
		require.NoError(t, err)
		var msg hostproxy.RequestMessage
		require.NoError(t, json.Unmarshal(env.Message, &msg))
		if msg.Type == wire.TypeHostBrowserRequest {
			return msg
		}
	}
}

// nextPageRequest is nextRequest after answering, through post, the tab
// set-up a conversation's Build sends the extension first (Vellum.createTab,
// Vellum.attach) and the target look-up of a backend's first command in a
// named tab (Target.getTargetInfo).
func nextPageRequest(t *testing.T, ctx context.Context, s *eventhubtest.Stream, post func(requestID, content string)) hostproxy.RequestMessage {
	t.Helper()
	for {
		msg := nextRequest(t, ctx, s)
		switch msg.CDPMethod {
		case wire.MethodCreateTab:
			post(msg.RequestID, `{"tabId":7}`)
		case wire.MethodAttach:
			post(msg.RequestID, `{}`)
		case "Target.getTargetInfo":
			post(msg.RequestID, `{"targetInfo":{"targetId":"T7","type":"page","url":"about:blank"}}`)
		default:
			return msg
		}
	}
}

// vellumResult posts one successful result as the Vellum extension does.
func vellumResult(t *testing.T, srv *httptest.Server, token string) func(requestID, content string) {
	return func(requestID, content string) {
		body, _ := json.Marshal(hostproxy.ResultBody{RequestID: requestID, Content: content})
		require.Equal(t, http.StatusOK, vellumPost(t, srv, token, wire.PathHostBrowserResult, string(body)))
	}
}

func neverCalled() *browserbackendtest.Provider {
	return &browserbackendtest.Provider{K: browserbackend.KindLocal, NewBackend: func() *browserbackendtest.Backend {
		return browserbackendtest.NewBackend(browserbackend.KindLocal, browserbackendtest.JSON(map[string]any{}))
	}}
}

// TestWire2_PlainTextAndDoublyEncodedErrorsStayInTheUsersBrowser: in auto
// mode, an extension's plain-text error and its twice-encoded CDP error are
// protocol errors: the hidden local browser never runs the command.
func TestWire2_PlainTextAndDoublyEncodedErrorsStayInTheUsersBrowser(t *testing.T) {
	local := neverCalled()
	rt, srv, _ := newWireServer(t, func(c *runtime.Config) { c.Fallbacks = []browserbackend.Provider{local} })
	token := pairLikeVellum(t, srv)
	stream := subscribeLikeVellum(t, srv, token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a broken test only
	defer cancel()
	answers := []struct {
		content string
		want    error
	}{
		{`Cannot access a chrome:// URL`, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeForbiddenTarget}},
		{`No tab with given id 999999.`, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodeTargetNotFound}},
		{`{"code":-32000,"message":"{\"code\":-32601,\"message\":\"'No.suchMethod' wasn't found\"}"}`, browserbackend.ErrMethodNotFound},
	}
	for _, a := range answers {
		errc := make(chan error, 1)
		go func() {
			_, err := rt.Run(ctx, runtime.CommandRequest{ConversationID: "c", BrowserMode: "auto", Method: "Runtime.evaluate",
				TimeoutMs: 3600_000})
			errc <- err
		}()
		msg := nextPageRequest(t, ctx, stream, vellumResult(t, srv, token))
		body, _ := json.Marshal(hostproxy.ResultBody{RequestID: msg.RequestID, Content: a.content, IsError: true})
		require.Equal(t, http.StatusOK, vellumPost(t, srv, token, wire.PathHostBrowserResult, string(body)))
		err := <-errc
		assert.ErrorIs(t, err, a.want, a.content)
		assert.NotErrorIs(t, err, browserbackend.ErrTransport, a.content)
	}
	assert.Zero(t, local.Builds(), "no failover to the local browser")
}

// TestWire5_AnEventFloodNeverCostsAResultAndOversizedResultsFailAtOnce: 2,000
// event posts in the same second (a frozen clock) leave every result post
// of that second accepted; the events over their budget are shed, counted
// and logged once. A result above the cap fails its caller with
// payload_too_large, not a timeout, and nothing fails over.
func TestWire5_AnEventFloodNeverCostsAResultAndOversizedResultsFailAtOnce(t *testing.T) {
	clk := &clock{t: time.Now()}
	local := neverCalled()
	rt, srv, rec := newWireServer(t, func(c *runtime.Config) {
		c.Now, c.EventRate, c.EventBurst, c.MaxBodyBytes = clk.Now, 100, 100, 4096
		c.Fallbacks = []browserbackend.Provider{local}
	})
	token := pairLikeVellum(t, srv)
	stream := subscribeLikeVellum(t, srv, token)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a broken test only
	defer cancel()

	const events, results = 2000, 20
	var wg sync.WaitGroup
	statuses := make(chan int, events)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < events; i += 8 {
				statuses <- vellumPost(t, srv, token, wire.PathHostBrowserEvent, `{"type":"host_browser_event","method":"Runtime.consoleAPICalled","params":{}}`)
			}
		}()
	}
	for range results {
		errc := make(chan error, 1)
		go func() {
			_, err := rt.Run(ctx, runtime.CommandRequest{ConversationID: "c", BrowserMode: "auto", Method: "Runtime.evaluate"})
			errc <- err
		}()
		msg := nextPageRequest(t, ctx, stream, vellumResult(t, srv, token))
		assert.Equal(t, http.StatusOK, vellumPost(t, srv, token, wire.PathHostBrowserResult,
			`{"requestId":"`+msg.RequestID+`","content":"{\"result\":{}}","isError":false}`))
		assert.NoError(t, <-errc)
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 100, http.StatusTooManyRequests: events - 100}, counts)
	assert.Equal(t, uint64(events-100), rt.Proxy.Stats().EventsShed)
	assert.Len(t, rec.Find("host_browser events shed over the client's event budget"), 1, "one line for the frozen second")
	assert.Empty(t, rec.Find("rate limit exceeded"))

	errc := make(chan error, 1)
	go func() {
		_, err := rt.Run(ctx, runtime.CommandRequest{ConversationID: "c", BrowserMode: "auto", Method: "Page.captureScreenshot",
			TimeoutMs: 3600_000})
		errc <- err
	}()
	msg := nextPageRequest(t, ctx, stream, vellumResult(t, srv, token))
	big := `{"requestId":"` + msg.RequestID + `","content":"` + strings.Repeat("A", 8192) + `","isError":false}`
	assert.Equal(t, http.StatusRequestEntityTooLarge, vellumPost(t, srv, token, wire.PathHostBrowserResult, big))
	err := <-errc
	assert.ErrorIs(t, err, &browserbackend.Error{Class: browserbackend.ClassProtocol, Code: browserbackend.CodePayloadTooLarge})
	assert.Zero(t, local.Builds(), "no failover to the local browser")
}
