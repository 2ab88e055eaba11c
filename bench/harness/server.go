package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/examples/extension"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/bridge"
)

// ExtensionID is the id Chrome derives from the key in the reference
// extension's manifest.json.
const ExtensionID = "fnkhihckcobbnjjhjjacjdbbidilbmnl"

// discard is the logger of every library component in the harness: records
// are dropped at the Enabled check, so logging costs next to nothing.
var discard = slog.New(slog.DiscardHandler)

// Server is the assistant-runtime side of the extension and host-bridge
// paths, composed like examples/server/runtime (pairing, auth middleware,
// hub, proxy) but without the hub's rate limiter (and the auth.Identify step
// that only feeds it): its loopback budget of 1200 requests a minute would
// throttle a benchmark that posts thousands of results. It listens on
// 127.0.0.1 only.
type Server struct {
	Hub   *eventhub.InProcess
	Proxy *hostproxy.Proxy
	Auth  *auth.Authority
	URL   string
	// FetchOnlyURL serves the same runtime without the result socket route
	// (404), like a server from before it: an extension paired there POSTs
	// every result.
	FetchOnlyURL string
	// SocketURL serves the same runtime with the result socket's subscribed
	// mode offered (hostproxy.SocketOptions.Subscriber), as the reference
	// runtime does: an extension paired there runs over one WebSocket.
	SocketURL string

	srv, fetchOnly, socket *httptest.Server

	// record turns on reading durationMs from results (the extension's
	// time inside chrome.debugger.sendCommand) and counting them by
	// transport. Off for screenshots, where parsing the body would distort
	// time and memory.
	record    atomic.Bool
	lastID    atomic.Value // string: the latest request id the proxy made
	mu        sync.Mutex
	durations map[string][2]float64
	via       map[string]hostproxy.Transport // request id → how its result came
	n         atomic.Int64
	// onReceipt, when set, sees the request id of every result the proxy
	// accepted (the scale phase counts duplicates with it).
	onReceipt atomic.Pointer[func(requestID string)]
}

// StartServer composes and serves the runtime side.
func StartServer() (*Server, error) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	a, err := auth.New(auth.Config{Key: key, AllowedOrigins: []string{"chrome-extension://" + ExtensionID},
		Logger: discard, PairLimit: 1000})
	if err != nil {
		return nil, err
	}
	s := &Server{Auth: a, durations: map[string][2]float64{}, via: map[string]hostproxy.Transport{}}
	s.Hub = eventhub.New(eventhub.WithLogger(discard))
	s.Proxy = hostproxy.New(hostproxy.Options{Hub: s.Hub, Logger: discard, NewRequestID: func() string {
		id := fmt.Sprintf("bench-%d", s.n.Add(1))
		s.lastID.Store(id)
		return id
	}, OnResult: s.onResult})
	authed := http.NewServeMux()
	authed.Handle("GET "+wire.PathEvents, s.Hub.EventsHandler())
	authed.Handle("POST "+wire.PathPing, s.Hub.PingHandler())
	s.Proxy.Mount(authed)
	mux := http.NewServeMux()
	mux.Handle("POST /v1/pair", a.PairHandler())
	mux.Handle("POST /v1/pair/refresh", a.RefreshHandler())
	// The reference runtime puts a.Identify and the rate limiter in front of
	// Middleware; without the limiter Identify has no job (and would verify
	// every token a second time), so the chain here is Middleware alone.
	protected := a.Middleware(authed)
	for _, p := range []string{wire.PathEvents, wire.PathPing, wire.PathHostBrowserResult,
		wire.PathHostBrowserEvent, wire.PathHostBrowserSessionInvalidated} {
		mux.Handle(p, protected)
	}
	mux.Handle("GET "+wire.PathHostBrowserResultSocket, a.LocalOnly(s.Proxy.ResultSocketHandler(hostproxy.SocketOptions{
		Verify: a.VerifyClient, AllowedOrigins: []string{"chrome-extension://" + ExtensionID}, LoopbackOnly: true})))
	subscribed := a.LocalOnly(s.Proxy.ResultSocketHandler(hostproxy.SocketOptions{
		Verify: a.VerifyClient, AllowedOrigins: []string{"chrome-extension://" + ExtensionID}, LoopbackOnly: true,
		Subscriber: s.Hub}))
	s.srv, err = loopbackServer(mux)
	if err == nil {
		s.socket, err = loopbackServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == wire.PathHostBrowserResultSocket {
				subscribed.ServeHTTP(w, r)
				return
			}
			mux.ServeHTTP(w, r)
		}))
		if err != nil {
			s.srv.Close()
		}
	}
	if err == nil {
		s.fetchOnly, err = loopbackServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == wire.PathHostBrowserResultSocket {
				http.NotFound(w, r)
				return
			}
			mux.ServeHTTP(w, r)
		}))
		if err != nil {
			s.srv.Close()
			s.socket.Close()
		}
	}
	if err != nil {
		s.Proxy.Close()
		s.Hub.Close()
		return nil, err
	}
	s.URL, s.FetchOnlyURL, s.SocketURL = s.srv.URL, s.fetchOnly.URL, s.socket.URL
	return s, nil
}

// Close stops the proxy, the hub and the HTTP server.
func (s *Server) Close() {
	s.Proxy.Close()
	s.Hub.Close()
	for _, srv := range []*httptest.Server{s.srv, s.fetchOnly, s.socket} {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// onResult is the proxy's OnResult hook: while recording, it keeps the
// timings the extension sends with each result and counts results by
// transport. The bridges' results (client ids "bench-…") carry no timings.
func (s *Server) onResult(r hostproxy.ResultReceipt) {
	if f := s.onReceipt.Load(); f != nil {
		(*f)(r.RequestID)
	}
	if !s.record.Load() || strings.HasPrefix(r.ClientID, "bench-") {
		return
	}
	var p struct {
		DurationMs *float64 `json:"durationMs"`
		HandledMs  *float64 `json:"handledMs"`
	}
	// The remote mode reports durationMs only; its handled time is then
	// unknown and stands at durationMs.
	ok := json.Unmarshal(r.Raw, &p) == nil && p.DurationMs != nil
	if ok && p.HandledMs == nil {
		p.HandledMs = p.DurationMs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.durations[r.RequestID] = [2]float64{*p.DurationMs, *p.HandledMs}
	}
	s.via[r.RequestID] = r.Transport
}

// Via returns how the result of requestID came (while recording), or "".
func (s *Server) Via(requestID string) hostproxy.Transport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.via[requestID]
}

// Published returns how many requests the proxy made (each with a fresh
// request id, published once).
func (s *Server) Published() int { return int(s.n.Load()) }

// LastRequestID returns the id of the latest request the proxy published.
func (s *Server) LastRequestID() string {
	id, _ := s.lastID.Load().(string)
	return id
}

// Timing returns what the extension reported with a request's result, in
// ms: durationMs (time inside chrome.debugger.sendCommand) and handledMs
// (from the frame's arrival in the worker to the result post).
func (s *Server) Timing(requestID string) (debugger, handled float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.durations[requestID]
	return d[0], d[1], ok
}

// WaitClient waits, on roster changes, until a client of interfaceID is
// connected.
func (s *Server) WaitClient(ctx context.Context, interfaceID string) (eventhub.ClientInfo, error) {
	for {
		changed := s.Hub.Changed()
		for _, c := range s.Hub.Roster() {
			if c.InterfaceID == interfaceID {
				return c, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return eventhub.ClientInfo{}, fmt.Errorf("benchreport: no %s client connected: %w", interfaceID, ctx.Err())
		}
	}
}

// Invocation is an invocation of the server's actor.
func (s *Server) Invocation(conv, iface string) bb.Invocation {
	return bb.Invocation{ConversationID: conv, InterfaceID: iface, ActorPrincipalID: s.Auth.ActorPrincipalID()}
}

// BridgeActor is the actor the desktop bridge acts for. It differs from the
// extension's so that the host-bridge provider, which steps aside while an
// extension of the invoking actor is connected, proposes it.
const BridgeActor = "bench-bridge-actor"

// BridgeInvocation is an invocation of BridgeActor.
func (s *Server) BridgeInvocation(conv string) bb.Invocation {
	return bb.Invocation{ConversationID: conv, InterfaceID: wire.InterfaceMacOS, ActorPrincipalID: BridgeActor}
}

// StartBridge runs the reference desktop bridge (hostproxy/bridge) in this
// process against the server, driving the browser at wsURL. The returned
// stop function ends it and waits.
func (s *Server) StartBridge(clientID, wsURL string) (stop func(), err error) {
	return s.startBridge(BridgeActor, clientID, wsURL)
}

func (s *Server) startBridge(actor, clientID, wsURL string) (stop func(), err error) {
	tok, err := s.Auth.Mint(auth.Grant{Actor: actor, InterfaceID: wire.InterfaceMacOS, ClientID: clientID})
	if err != nil {
		return nil, err
	}
	br, err := bridge.New(bridge.Options{
		ServerURL: s.URL, Token: tok.Token, ClientID: clientID, InterfaceID: wire.InterfaceMacOS,
		Dial:   bridge.CDPInspectDialer(cdpinspect.DefaultConfig(), cdpinspect.WithWebSocketURL(wsURL), cdpinspect.WithLogger(discard)),
		Logger: discard,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = br.Run(ctx) }()
	return func() { cancel(); <-done }, nil
}

// CopyExtension copies the reference extension (without Go files) from
// root/examples/extension to a temporary directory and writes config.json so
// it pairs with serverURL and connects at start. The caller removes the dir.
func CopyExtension(root, serverURL string) (string, error) {
	dst, err := os.MkdirTemp("", "benchreport-ext-")
	if err != nil {
		return "", err
	}
	if err := extension.Install(filepath.Join(root, "examples", "extension"), dst, serverURL); err != nil {
		os.RemoveAll(dst)
		return "", err
	}
	return dst, nil
}

// loopbackServer serves h on a fresh 127.0.0.1 port (never another address).
func loopbackServer(h http.Handler) (*httptest.Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	return srv, nil
}

// Fixtures serves the benchmark pages on 127.0.0.1.
type Fixtures struct{ srv *httptest.Server }

// noisePage fills a w×h canvas with deterministic pseudo-random pixels, so a
// PNG of it cannot be compressed: its size is ≈ 3 bytes per pixel.
// window.noiseReady is true once drawn.
const noisePage = `<!doctype html><html><head><title>noise</title>
<style>html,body{margin:0;padding:0}canvas{display:block}</style></head>
<body><canvas id="c" width="%d" height="%d"></canvas><script>
const c = document.getElementById('c');
const ctx = c.getContext('2d');
const img = ctx.createImageData(c.width, c.height);
let s = 0x2545F491;
for (let i = 0; i < img.data.length; i += 4) {
  s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
  img.data[i] = s & 255; img.data[i+1] = (s >>> 8) & 255; img.data[i+2] = (s >>> 16) & 255; img.data[i+3] = 255;
}
ctx.putImageData(img, 0, 0);
window.noiseReady = true;
</script></body></html>`

// StartFixtures serves /page (a small page), /noise?w=&h= and the pages of
// the MCP scenario (/form, /article, /big; see mcpPages).
func StartFixtures() (*Fixtures, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>bench</title><h1>bench</h1>")
	})
	for path, body := range mcpPages() {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		})
	}
	mux.HandleFunc(PageDownload, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="bench.bin"`)
		_, _ = w.Write(bytes.Repeat([]byte("browserchain bench download\n"), 1024))
	})
	mux.HandleFunc("/noise", func(w http.ResponseWriter, r *http.Request) {
		var wd, ht int
		fmt.Sscan(r.URL.Query().Get("w"), &wd)
		fmt.Sscan(r.URL.Query().Get("h"), &ht)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, noisePage, wd, ht)
	})
	srv, err := loopbackServer(mux)
	if err != nil {
		return nil, err
	}
	return &Fixtures{srv: srv}, nil
}

// URL returns the fixture URL of path.
func (f *Fixtures) URL(path string) string { return f.srv.URL + path }

// Close stops the fixture server.
func (f *Fixtures) Close() { f.srv.CloseClientConnections(); f.srv.Close() }

// stepTimeout bounds every single wait of the harness (not a measurement).
const stepTimeout = 60 * time.Second
