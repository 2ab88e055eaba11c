package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/internal/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newJSONLogger(w *logtest.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fixture is one remote server on loopback with a real hub, proxy and
// SQLite store. Every secret and token it hands out is remembered, and the
// captured log (debug level) is checked at the end never to contain one.
type fixture struct {
	t       *testing.T
	dir     string
	clock   *testClock
	logs    *logtest.Buffer
	log     *slog.Logger
	hub     *eventhub.InProcess
	proxy   *hostproxy.Proxy
	store   *Store
	srv     *Server
	http    *httptest.Server
	secrets *sync.Map

	reqMu    sync.Mutex
	requests []string // "METHOD REQUEST-URI Referer" of every request the server saw
}

type fixtureOpts struct {
	tls      bool
	limits   Limits
	endpoint string
	dir      string
	// maxBody is the proxy's Options.MaxBodyBytes (0: its default).
	maxBody int64
	// peer, when set, is a fixture whose clock time and remembered secrets
	// this one shares (a second server on the same store).
	peer *fixture
	// setup, when set, serves the routes as production does: the
	// http.Server of NewHTTPServer on a listener wrapped by this limit.
	setup *SetupLimit
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: o.dir, clock: &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, logs: &logtest.Buffer{}}
	if f.dir == "" {
		f.dir = t.TempDir()
	}
	f.secrets = &sync.Map{}
	if o.peer != nil {
		f.secrets = o.peer.secrets
		f.clock.t = o.peer.clock.Now()
	}
	f.log = newJSONLogger(f.logs)
	f.hub = eventhub.New(eventhub.WithLogger(f.log))
	f.proxy = hostproxy.New(hostproxy.Options{Hub: f.hub, Logger: f.log, MaxBodyBytes: o.maxBody})
	var err error
	f.store, err = OpenStore(filepath.Join(f.dir, "grants.db"), StoreOptions{Now: f.clock.Now})
	require.NoError(t, err)
	// Every request the server sees is recorded for the fragment check.
	var mux atomic.Pointer[http.ServeMux]
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.logRequest(r)
		mux.Load().ServeHTTP(w, r)
	})
	switch {
	case o.setup != nil:
		f.http = httptest.NewUnstartedServer(record)
		f.http.Config = NewHTTPServer(record, o.setup, nil, f.log)
		f.http.Listener = o.setup.Listener(f.http.Listener)
		f.http.Start()
	case o.tls:
		f.http = httptest.NewTLSServer(record)
	default:
		f.http = httptest.NewServer(record)
	}
	if o.endpoint == "" {
		o.endpoint = f.socketURL()
	}
	f.srv, err = New(Options{Store: f.store, Proxy: f.proxy, Hub: f.hub, Endpoint: o.endpoint, Limits: o.limits,
		Logger: f.log, ServiceName: "test service"})
	require.NoError(t, err)
	m := http.NewServeMux()
	f.srv.Mount(m)
	mux.Store(m)
	t.Cleanup(func() {
		f.srv.Close()
		f.http.Close()
		f.proxy.Close()
		f.hub.Close()
		f.store.Close()
		f.assertNoSecretLogged()
	})
	return f
}

// logRequest records the request line and Referer of every request: the
// places a URL (and so a fragment, were a client to send it) would travel.
func (f *fixture) logRequest(r *http.Request) {
	f.reqMu.Lock()
	defer f.reqMu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.RequestURI+" "+r.Referer())
}

func (f *fixture) seen() []string {
	f.reqMu.Lock()
	defer f.reqMu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fixture) remember(secret string) { f.secrets.Store(secret, true) }

func (f *fixture) assertNoSecretLogged() {
	out := f.logs.String()
	f.secrets.Range(func(k, _ any) bool {
		assert.NotContains(f.t, out, k.(string), "a credential reached the log")
		return true
	})
}

// link creates a pairing link for actor and returns its secret.
func (f *fixture) link(actor string) (Link, string) {
	f.t.Helper()
	l, err := f.srv.CreateLink(context.Background(), actor)
	require.NoError(f.t, err)
	u, err := url.Parse(l.URL)
	require.NoError(f.t, err)
	f.remember(u.Fragment)
	return l, u.Fragment
}

func (f *fixture) authorizeURL() string { return f.http.URL + "/extension/authorize" }

func (f *fixture) socketURL() string {
	return "ws" + strings.TrimPrefix(f.http.URL, "http") + "/extension"
}

// authorize posts one exchange and returns the response and its decoded
// body.
func (f *fixture) authorize(cred, action, next string) (*http.Response, authorizeResponse) {
	f.t.Helper()
	body, _ := json.Marshal(authorizeRequest{Action: action, NextToken: next, Label: "test laptop"})
	req, err := http.NewRequest(http.MethodPost, f.authorizeURL(), bytes.NewReader(body))
	require.NoError(f.t, err)
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.http.Client().Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	var out authorizeResponse
	if resp.StatusCode == http.StatusOK {
		require.NoError(f.t, json.NewDecoder(resp.Body).Decode(&out))
	}
	return resp, out
}

// pair pairs a new device for actor and returns its token and device id.
func (f *fixture) pair(actor string) (token, deviceID string) {
	f.t.Helper()
	_, secret := f.link(actor)
	token = NewToken()
	f.remember(token)
	resp, out := f.authorize(secret, "pair", token)
	require.Equal(f.t, http.StatusOK, resp.StatusCode)
	return token, out.DeviceID
}

// dialRaw upgrades with the given subprotocols and extra headers.
func (f *fixture) dialRaw(path string, protos []string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // against a hang only
	defer cancel()
	u := "ws" + strings.TrimPrefix(f.http.URL, "http") + path
	return websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: protos, HTTPHeader: hdr, HTTPClient: f.http.Client()})
}

// device is a Go client on a remote socket, playing the extension.
type device struct {
	t        *testing.T
	ws       *websocket.Conn
	clientID string
	deviceID string
	frames   chan serverFrame
	ui       chan []byte // UI channel requests (frames without a type)
	done     chan struct{}
	closeErr error
}

// dial opens a device socket with token and reads its ready frame.
func (f *fixture) dial(token string) *device {
	f.t.Helper()
	ws, resp, err := f.dialRaw("/extension", []string{wire.SubprotocolAuthPrefix + token}, http.Header{"Origin": {"chrome-extension://abcdefghijklmnopabcdefghijklmnop"}})
	require.NoError(f.t, err)
	require.Equal(f.t, wire.SubprotocolAuthPrefix+token, resp.Header.Get("Sec-WebSocket-Protocol"), "the subprotocol is echoed")
	ws.SetReadLimit(hostproxy.DefaultMaxBodyBytes)
	d := &device{t: f.t, ws: ws, frames: make(chan serverFrame, 64), ui: make(chan []byte, 16), done: make(chan struct{})}
	ready := d.readFrame()
	require.Equal(f.t, wire.SocketReady, ready.Type)
	require.Equal(f.t, f.proxy.ClientFrames().MaxBodyBytes(), ready.MaxBodyBytes, "the ready frame carries the frame cap")
	d.clientID, d.deviceID = ready.ClientID, ready.DeviceID
	go d.loop()
	f.t.Cleanup(func() { ws.CloseNow(); <-d.done })
	return d
}

func (d *device) readFrame() serverFrame {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := d.ws.Read(ctx)
	require.NoError(d.t, err)
	var fr serverFrame
	require.NoError(d.t, json.Unmarshal(data, &fr))
	return fr
}

func (d *device) loop() {
	defer close(d.done)
	for {
		_, data, err := d.ws.Read(context.Background())
		if err != nil {
			d.closeErr = err
			return
		}
		var fr serverFrame
		if json.Unmarshal(data, &fr) == nil {
			if fr.Type == "" {
				d.ui <- data
				continue
			}
			d.frames <- fr
		}
	}
}

// next returns the next frame (10 s against a hang only).
func (d *device) next() serverFrame {
	d.t.Helper()
	select {
	case fr := <-d.frames:
		return fr
	case <-d.done:
		d.t.Fatalf("socket closed: %v", d.closeErr)
	case <-time.After(10 * time.Second):
		d.t.Fatal("no frame")
	}
	return serverFrame{}
}

// nextRequest returns the next host_browser_request the hub sent.
func (d *device) nextRequest() hostproxy.RequestMessage {
	d.t.Helper()
	for {
		fr := d.next()
		if fr.Type != wire.RemoteEnvelope {
			continue
		}
		var env eventhub.Envelope
		require.NoError(d.t, json.Unmarshal(fr.Event, &env))
		var m hostproxy.RequestMessage
		require.NoError(d.t, json.Unmarshal(env.Message, &m))
		if m.Type == wire.TypeHostBrowserRequest {
			return m
		}
	}
}

func (d *device) send(v any) {
	d.t.Helper()
	data, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(d.t, d.ws.Write(ctx, websocket.MessageText, data))
}

// answer sends a result frame for requestID.
func (d *device) answer(requestID, content string) {
	d.send(map[string]any{"type": wire.SocketResult, "requestId": requestID, "content": content, "isError": false})
}

// closed waits for the server to close the socket and returns its status.
func (d *device) closed() websocket.StatusCode {
	d.t.Helper()
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.t.Fatal("socket still open")
	}
	return websocket.CloseStatus(d.closeErr)
}
