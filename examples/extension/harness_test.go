package extension_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/examples/server/runtime"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// ExtensionOrigin is the Origin the extension's requests carry.
const ExtensionOrigin = extension.Origin

// stepTimeout bounds each wait of a test on the browser or the server. It is
// a deadline against hanging, not synchronisation.
const stepTimeout = 30 * time.Second

// records is a slog handler that keeps every record for assertions.
type records struct {
	mu   sync.Mutex
	recs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	rec.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s", a); return true })
	r.mu.Lock()
	r.recs = append(r.recs, b.String())
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs(as []slog.Attr) slog.Handler { return &withAttrs{r, as} }
func (r *records) WithGroup(string) slog.Handler         { return r }

// matching returns the records containing every needle.
func (r *records) matching(needles ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
next:
	for _, s := range r.recs {
		for _, n := range needles {
			if !strings.Contains(s, n) {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

type withAttrs struct {
	r  *records
	as []slog.Attr
}

func (w *withAttrs) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (w *withAttrs) Handle(ctx context.Context, rec slog.Record) error {
	rec = rec.Clone()
	rec.AddAttrs(w.as...)
	return w.r.Handle(ctx, rec)
}
func (w *withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{w.r, append(append([]slog.Attr{}, w.as...), as...)}
}
func (w *withAttrs) WithGroup(string) slog.Handler { return w }

// resultPost is one result as the server received it: every POST
// /v1/host-browser-result, and every result accepted on the result socket.
type resultPost struct {
	RequestID  string   `json:"requestId"`
	IsError    bool     `json:"isError"`
	DurationMs *float64 `json:"durationMs"`
	HandledMs  *float64 `json:"handledMs"`
	ReceivedAt float64  `json:"receivedAt"` // ms since the Unix epoch (extension clock)
	PostedAt   float64  `json:"postedAt"`
	Status     int      `json:"-"`
	// Transport is how it came: hostproxy.TransportHTTP or TransportWebSocket.
	Transport hostproxy.Transport `json:"-"`
	// Arrived is when the post reached the server (before the route ran);
	// for a socket result, when the socket accepted it.
	Arrived time.Time `json:"-"`
}

// stack is the reference runtime on a loopback port with a headless Chromium
// that loaded the reference extension, configured by config.json to pair
// with it and connect at start.
type stack struct {
	rt      *runtime.Runtime
	srv     *httptest.Server
	browser *chromiumtest.Browser
	logs    *records
	ids     chan string // request ids as the proxy creates them

	mu      sync.Mutex
	results []resultPost
	posted  chan struct{}  // closed and replaced at every recorded post
	unreg   atomic.Int32   // extension registrations that ended
	created sync.Map       // request id → time.Time the proxy created it
	routes  map[string]int // "METHOD path" → requests the server received (under mu)
}

type stackOptions struct {
	// origins replaces the allowed pairing origins (default: the extension's).
	origins   []string
	fallbacks []browserbackend.Provider
	timeout   time.Duration
	tokenTTL  time.Duration
	// noSocket serves the runtime without its result socket route (404), as
	// a server from before it would.
	noSocket bool
	// socketTried, when set, is closed at the first handshake on the
	// result socket route.
	socketTried chan struct{}
	// resultsOnly serves the result socket without its subscribed mode
	// (runtime.Config.NoSubscribedSocket).
	resultsOnly bool
}

func startStack(t testing.TB, o stackOptions) *stack {
	t.Helper()
	s := &stack{logs: &records{}, ids: make(chan string, 1024), posted: make(chan struct{}), routes: map[string]int{}}
	if o.origins == nil {
		o.origins = []string{ExtensionOrigin}
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	var n atomic.Int64
	rt, err := runtime.New(runtime.Config{
		Key:                key,
		AllowedOrigins:     o.origins,
		Logger:             slog.New(s.logs),
		Fallbacks:          o.fallbacks,
		RequestTimeout:     o.timeout,
		TokenTTL:           o.tokenTTL,
		NoSubscribedSocket: o.resultsOnly,
		OnResult: func(r hostproxy.ResultReceipt) {
			if r.Transport == hostproxy.TransportWebSocket { // record() sees the posts
				s.add(r.Raw, http.StatusOK, hostproxy.TransportWebSocket, time.Now())
			}
		},
		NewRequestID: func() string {
			id := fmt.Sprintf("req-%d", n.Add(1))
			s.created.Store(id, time.Now())
			select {
			case s.ids <- id:
			default:
			}
			return id
		},
		HubOptions: []eventhub.Option{eventhub.WithHooks(eventhub.Hooks{
			OnUnregister: func(c eventhub.ClientInfo, _ eventhub.EndReason) {
				if c.InterfaceID == wire.InterfaceChromeExtension {
					s.unreg.Add(1)
				}
			},
		})},
	})
	require.NoError(t, err)
	s.rt = rt
	h := s.record(rt.Handler)
	if o.noSocket || o.socketTried != nil {
		next, once := h, sync.Once{}
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == wire.PathHostBrowserResultSocket {
				if o.socketTried != nil {
					once.Do(func() { close(o.socketTried) })
				}
				if o.noSocket {
					http.NotFound(w, r)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
	s.srv = chromiumtest.LoopbackServer(t, h)
	t.Cleanup(func() {
		rt.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", strings.Join(s.logs.matching(""), "\n"))
		}
	})

	dir := copyExtension(t, s.srv.URL)
	s.browser = chromiumtest.Start(t, chromiumtest.WithExtension(dir))
	return s
}

// record wraps h to count every request by method and path and to keep
// every result post (request id, status, durationMs).
func (s *stack) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.routes[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		if r.URL.Path != wire.PathHostBrowserResult {
			h.ServeHTTP(w, r)
			return
		}
		arrived := time.Now()
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		s.add(body, sw.status, hostproxy.TransportHTTP, arrived)
	})
}

// add records one result.
func (s *stack) add(raw []byte, status int, tr hostproxy.Transport, arrived time.Time) {
	var p resultPost
	_ = json.Unmarshal(raw, &p)
	p.Status, p.Transport, p.Arrived = status, tr, arrived
	s.mu.Lock()
	s.results = append(s.results, p)
	close(s.posted)
	s.posted = make(chan struct{})
	s.mu.Unlock()
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }

// waitPosts waits until n result posts for id were recorded (the recorder
// runs after the route, which may already have completed the request).
func (s *stack) waitPosts(t testing.TB, id string, n int) []resultPost {
	t.Helper()
	deadline := time.NewTimer(stepTimeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.posted
		s.mu.Unlock()
		if got := s.resultsFor(id); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("fewer than %d result posts for %s", n, id)
		}
	}
}

// requests returns how many requests the server received for each
// "METHOD path".
func (s *stack) requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.routes))
	for k, v := range s.routes {
		out[k] = v
	}
	return out
}

// allResults returns every result the server recorded.
func (s *stack) allResults() []resultPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]resultPost(nil), s.results...)
}

func (s *stack) resultsFor(id string) []resultPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []resultPost
	for _, p := range s.results {
		if p.RequestID == id {
			out = append(out, p)
		}
	}
	return out
}

// copyExtension installs the extension in a temp dir, paired with serverURL.
func copyExtension(t testing.TB, serverURL string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, extension.Install(".", dst, serverURL))
	return dst
}

// waitExtension waits, on roster changes, until a chrome-extension client is
// connected, and returns it.
func (s *stack) waitExtension(t testing.TB) eventhub.ClientInfo {
	t.Helper()
	deadline := time.NewTimer(stepTimeout)
	defer deadline.Stop()
	for {
		changed := s.rt.Hub.Changed()
		for _, c := range s.rt.Hub.Roster() {
			if c.InterfaceID == wire.InterfaceChromeExtension {
				return c
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("the extension did not subscribe within %v; logs:\n%s", stepTimeout,
				strings.Join(s.logs.matching(""), "\n"))
		}
	}
}

func (s *stack) invocation(conv string) browserbackend.Invocation {
	return browserbackend.Invocation{ConversationID: conv, InterfaceID: wire.InterfaceMacOS,
		ActorPrincipalID: s.rt.Auth.ActorPrincipalID(), Mode: browserbackend.ModeAuto}
}

// send sends one command and decodes the result into out (when non-nil).
func send(t testing.TB, c *browserbackend.Client, method string, params any, out any) {
	t.Helper()
	raw, err := trySend(c, method, params)
	require.NoError(t, err, method)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out), method)
	}
}

func trySend(c *browserbackend.Client, method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	var p json.RawMessage
	if params != nil {
		p, _ = json.Marshal(params)
	}
	return c.Send(ctx, browserbackend.Command{Method: method, Params: p})
}

// gate is a page-side barrier: the page fetches /started/<name>, which
// signals started, then /release/<name>, which blocks until release is
// closed (or the test ends).
type gate struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

// fixtures serves test pages and gates on a loopback port.
type fixtures struct {
	srv   *httptest.Server
	mu    sync.Mutex
	gates map[string]*gate
	done  chan struct{}
}

func startFixtures(t testing.TB) *fixtures {
	f := &fixtures{gates: map[string]*gate{}, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/page/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><h1 style='color:#c00'>%s</h1>", r.PathValue("name"), r.PathValue("name"))
		if child := r.URL.Query().Get("frame"); child != "" {
			fmt.Fprintf(w, "<iframe src=%q></iframe>", child)
		}
	})
	mux.HandleFunc("/started/{name}", func(w http.ResponseWriter, r *http.Request) {
		g := f.gate(r.PathValue("name"))
		g.once.Do(func() { close(g.started) })
		w.Header().Set("Access-Control-Allow-Origin", "*")
	})
	mux.HandleFunc("/release/{name}", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-f.gate(r.PathValue("name")).release:
		case <-f.done:
		case <-r.Context().Done():
		}
		w.Header().Set("Access-Control-Allow-Origin", "*")
	})
	// Closing done first lets Close finish while a page still waits.
	f.srv = chromiumtest.LoopbackServer(t, mux)
	t.Cleanup(func() { close(f.done) })
	return f
}

func (f *fixtures) gate(name string) *gate {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gates[name]
	if g == nil {
		g = &gate{started: make(chan struct{}), release: make(chan struct{})}
		f.gates[name] = g
	}
	return g
}

func (f *fixtures) page(name string) string { return f.srv.URL + "/page/" + name }

// gatedEval is a Runtime.evaluate expression that passes gate name and then
// yields value.
func (f *fixtures) gatedEval(name string, value int) map[string]any {
	expr := fmt.Sprintf("fetch(%q).then(() => fetch(%q)).then(() => %d)",
		f.srv.URL+"/started/"+name, f.srv.URL+"/release/"+name, value)
	return map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}
}

func waitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(stepTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// cdpConn is a minimal CDP client on the browser endpoint, used only to read
// the extension worker's test hooks.
type cdpConn struct {
	c  *websocket.Conn
	id int
}

func dialCDP(t testing.TB, wsURL string) *cdpConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL, nil)
	require.NoError(t, err)
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &cdpConn{c: c}
}

func (c *cdpConn) call(ctx context.Context, sessionID, method string, params any, out any) error {
	c.id++
	msg := map[string]any{"id": c.id, "method": method, "params": params}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	data, _ := json.Marshal(msg)
	if err := c.c.Write(ctx, websocket.MessageText, data); err != nil {
		return err
	}
	for {
		_, data, err := c.c.Read(ctx)
		if err != nil {
			return err
		}
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &resp) != nil || resp.ID != c.id {
			continue // an event
		}
		if resp.Error != nil {
			return fmt.Errorf("%s: %s", method, resp.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(resp.Result, out)
		}
		return nil
	}
}

// workerEval evaluates expr (awaiting a promise) in the extension's service
// worker and returns its JSON value.
func (s *stack) workerEval(t testing.TB, expr string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	c := dialCDP(t, s.browser.BrowserWSURL)
	sessionID := attachTarget(ctx, t, c, func(typ, url string) bool {
		return typ == "service_worker" && strings.HasPrefix(url, ExtensionOrigin+"/")
	})
	var ev struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	require.NoError(t, c.call(ctx, sessionID, "Runtime.evaluate",
		map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &ev))
	require.Empty(t, ev.ExceptionDetails, "worker evaluation of %s", expr)
	return ev.Result.Value
}

// attachTarget attaches c (flat session) to the last target that match
// accepts by type and URL, failing the test when there is none.
func attachTarget(ctx context.Context, t testing.TB, c *cdpConn, match func(typ, url string) bool) string {
	t.Helper()
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
			URL      string `json:"url"`
		} `json:"targetInfos"`
	}
	require.NoError(t, c.call(ctx, "", "Target.getTargets", map[string]any{}, &targets))
	var target string
	for _, ti := range targets.TargetInfos {
		if match(ti.Type, ti.URL) {
			target = ti.TargetID
		}
	}
	require.NotEmpty(t, target, "no matching target")
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, &att))
	return att.SessionID
}

func timeout() <-chan time.Time { return time.After(stepTimeout) }

// drainIDs forgets the request ids created so far.
func (s *stack) drainIDs() {
	for {
		select {
		case <-s.ids:
		default:
			return
		}
	}
}

// nextID returns the next request id the proxy creates.
func (s *stack) nextID(t testing.TB) string {
	t.Helper()
	select {
	case id := <-s.ids:
		return id
	case <-timeout():
		t.Fatal("no request was created")
		return ""
	}
}

// sendAsync sends one command on its own goroutine; the result arrives on
// the returned channel.
func sendAsync(ctx context.Context, c *browserbackend.Client, method string, params any) <-chan sendResult {
	ch := make(chan sendResult, 1)
	p, _ := json.Marshal(params)
	go func() {
		raw, err := c.Send(ctx, browserbackend.Command{Method: method, Params: p})
		ch <- sendResult{raw, err}
	}()
	return ch
}

type sendResult struct {
	raw json.RawMessage
	err error
}

func waitResult(t testing.TB, ch <-chan sendResult) sendResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-timeout():
		t.Fatal("the command did not return")
		return sendResult{}
	}
}

// post sends a forged result with the given token and client id header.
func (s *stack) post(t testing.TB, token, clientID string, body any) int {
	t.Helper()
	data, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, s.srv.URL+wire.PathHostBrowserResult, bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(wire.HeaderClientID, clientID)
	resp, err := s.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// extPage is a page of the extension (popup.html) opened in its own tab
// through the browser's DevTools endpoint.
type extPage struct {
	c       *cdpConn
	session string
}

func (s *stack) openExtPage(t testing.TB, path string) *extPage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	c := dialCDP(t, s.browser.BrowserWSURL)
	var created struct {
		TargetID string `json:"targetId"`
	}
	require.NoError(t, c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created))
	var att struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &att))
	// Page.navigate answers once the new document is committed; evaluate
	// then runs in it and waits for its load.
	require.NoError(t, c.call(ctx, att.SessionID, "Page.navigate", map[string]any{"url": ExtensionOrigin + "/" + path}, nil))
	p := &extPage{c: c, session: att.SessionID}
	p.eval(t, `new Promise((r) => document.readyState === 'complete' ? r(true) : addEventListener('load', () => r(true)))`)
	return p
}

// eval evaluates expr (awaiting a promise) and returns its JSON value.
func (p *extPage) eval(t testing.TB, expr string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	var ev struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	require.NoError(t, p.c.call(ctx, p.session, "Runtime.evaluate",
		map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &ev))
	require.Empty(t, ev.ExceptionDetails, "evaluation of %s", expr)
	return ev.Result.Value
}

// waitText resolves when the element's text equals want (a MutationObserver,
// not a poll).
func (p *extPage) waitText(t testing.TB, id, want string) {
	t.Helper()
	p.eval(t, fmt.Sprintf(`new Promise((resolve) => {
		const el = document.getElementById(%q);
		const check = () => { if (el && el.textContent === %q) resolve(true); };
		new MutationObserver(check).observe(document.body, {childList: true, characterData: true, subtree: true});
		check();
	})`, id, want))
}

// waitGone waits until the client's registration ends.
func (s *stack) waitGone(t testing.TB, clientID string) {
	t.Helper()
	waitClosed(t, s.rt.Hub.Gone(clientID), "the client to disconnect")
}

// openPage opens a dedicated tab with Vellum.createTab and loads u in it,
// returning once the main frame has navigated to u and fired its load event
// (observed through the forwarded CDP events, so no command runs in a
// document that is about to be replaced).
func openPage(t testing.TB, c *browserbackend.Client, u string) tab {
	t.Helper()
	events, stop := c.Events("")
	defer stop()
	// The conversation's first command opens its tab (Vellum.createTab at
	// the backend's Build).
	send(t, c, "Page.enable", nil, nil)
	cur, ok := c.Tab()
	require.True(t, ok, "the extension backend reports the conversation's tab")
	n, err := strconv.Atoi(cur.ID)
	require.NoError(t, err)
	var created tab
	require.NoError(t, json.Unmarshal([]byte(strconv.Itoa(n)), &created.ID))
	send(t, c, "Page.navigate", map[string]any{"url": u}, nil)
	for navigated := false; ; {
		select {
		case ev := <-events:
			switch ev.Method {
			case "Page.frameNavigated":
				var p struct {
					Frame struct{ ParentID, URL string }
				}
				require.NoError(t, json.Unmarshal(ev.Params, &p))
				navigated = navigated || (p.Frame.ParentID == "" && p.Frame.URL == u)
			case "Page.loadEventFired":
				if navigated {
					return created
				}
			}
		case <-timeout():
			t.Fatalf("%s did not load", u)
		}
	}
}
