package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy/auth"
)

// The prototype of the fix proposed in ANALYSIS.md for the extension's
// transport overhead: the extension sends its results over one WebSocket
// instead of one fetch POST each. It runs a patched COPY of the reference
// extension (relay.js's post() gains a WebSocket fast path) in a second
// browser, against a bench-only WebSocket route that feeds each message to
// the real result route (auth middleware, PXY-4 checks, proxy) in-process.
// Nothing here ships; it only measures what the change would buy.

// ProtoResultPath and ProtoEventsPath are the bench-only WebSocket routes of
// the prototype: results up, and the event stream down.
const (
	ProtoResultPath = "/bench/result-ws"
	ProtoEventsPath = "/bench/events-ws"
)

// relaySubscribeFetch is the event-stream fetch in relay.js's subscribe().
const relaySubscribeFetch = "resp = await fetch(settings.serverUrl + '/v1/events', { headers, signal: ctrl.signal, cache: 'no-store' });"

// relayEventsFetch replaces it: a Response-like object whose body is fed by
// a WebSocket carrying the same SSE bytes (so the relay's SSE parser, replay
// and heartbeats work unchanged).
const relayEventsFetch = "resp = await benchEventsFetch(settings.serverUrl, headers, ctrl.signal);"

// relayEventsHelper is inserted before subscribe().
const relayEventsHelper = `function benchEventsFetch(serverUrl, headers, signal) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(serverUrl.replace(/^http/, 'ws') + '` + ProtoEventsPath + `');
    const enc = new TextEncoder();
    let sc;
    const body = new ReadableStream({ start(c) { sc = c; } });
    ws.onopen = () => { ws.send(JSON.stringify({ headers })); resolve({ ok: true, status: 200, body }); };
    ws.onmessage = (e) => sc.enqueue(enc.encode(e.data));
    ws.onclose = () => { try { sc.close(); } catch {} };
    ws.onerror = () => reject(new Error('events websocket failed'));
    signal.addEventListener('abort', () => ws.close());
  });
}
`

const relaySubscribeHead = "async function subscribe(my, settings, creds, onOpen) {"

// relayPostHead is the start of relay.js's post(), where the patch goes.
const relayPostHead = "async function post(path, body, tries = 1) {\n  const c = conn;\n  if (!c) throw new Error('not connected');\n"

// relayPatch is inserted after relayPostHead: results go over the socket
// once it is open (the first one, and any while it reconnects, use fetch).
const relayPatch = `  if (path === '/v1/host-browser-result') {
    const ws = benchSocket(c);
    if (ws) { ws.send(JSON.stringify({ path, body })); return; }
  }
`

// relaySocket is the socket helper, inserted before post().
const relaySocket = `let benchWS = null, benchOpen = false;
function benchSocket(c) {
  if (benchWS) return benchOpen ? benchWS : null;
  benchWS = new WebSocket(c.serverUrl.replace(/^http/, 'ws') + '` + ProtoResultPath + `');
  benchWS.onopen = () => { benchWS.send(JSON.stringify({ token: c.token, clientId: c.clientId })); benchOpen = true; };
  benchWS.onclose = () => { benchWS = null; benchOpen = false; };
  return null;
}
`

// PatchRelayForProto rewrites lib/relay.js in the extension copy at dir:
// results over a WebSocket, and with eventsToo the event stream as well.
func PatchRelayForProto(dir string, eventsToo bool) error {
	file := filepath.Join(dir, "lib", "relay.js")
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	src := string(data)
	if !strings.Contains(src, relayPostHead) {
		return errors.New("benchreport: relay.js has changed; the prototype patch does not apply")
	}
	src = strings.Replace(src, relayPostHead, relaySocket+relayPostHead+relayPatch, 1)
	if eventsToo {
		if !strings.Contains(src, relaySubscribeFetch) || !strings.Contains(src, relaySubscribeHead) {
			return errors.New("benchreport: relay.js has changed; the prototype patch does not apply")
		}
		src = strings.Replace(src, relaySubscribeFetch, relayEventsFetch, 1)
		src = strings.Replace(src, relaySubscribeHead, relayEventsHelper+relaySubscribeHead, 1)
	}
	return os.WriteFile(file, []byte(src), 0o644)
}

// protoResultHandler accepts the prototype's socket: the first message is
// {token, clientId}, checked like a bearer token; every later message
// {path, body} is served by next as the POST the extension would have sent
// (same headers, so the auth middleware and the result route check it as
// usual). It answers nothing: the prototype is fire-and-forget.
func (s *Server) protoResultHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{ExtensionID}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(64 << 20)
		ctx := r.Context()
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var hello struct{ Token, ClientID string }
		if json.Unmarshal(data, &hello) != nil {
			return
		}
		if _, err := s.Auth.Verify(hello.Token, auth.ScopeActorClient); err != nil {
			c.Close(websocket.StatusPolicyViolation, "bad token")
			return
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m struct {
				Path string          `json:"path"`
				Body json.RawMessage `json:"body"`
			}
			if json.Unmarshal(data, &m) != nil || !strings.HasPrefix(m.Path, "/v1/host-browser-") {
				continue
			}
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, m.Path, bytes.NewReader(m.Body))
			req.RemoteAddr = "127.0.0.1:1"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+hello.Token)
			req.Header.Set(eventhub.HeaderClientID, hello.ClientID)
			next.ServeHTTP(httptest.NewRecorder(), req)
		}
	})
}

// protoEventsHandler accepts the prototype's event socket: the first
// message is {headers} (the ones the relay sends on GET /v1/events); the
// events route is then served in-process, each flushed chunk of its SSE
// bytes going out as one WebSocket text message.
func (s *Server) protoEventsHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: []string{ExtensionID}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var hello struct{ Headers map[string]string }
		if json.Unmarshal(data, &hello) != nil {
			return
		}
		go func() { // the client sends nothing more; a read error is its close
			defer cancel()
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, eventhub.EventsPath, nil)
		req.RemoteAddr = "127.0.0.1:1"
		for k, v := range hello.Headers {
			req.Header.Set(k, v)
		}
		next.ServeHTTP(&wsSSEWriter{ctx: ctx, c: c, h: http.Header{}}, req)
	})
}

// wsSSEWriter is the http.ResponseWriter of the in-process events route:
// writes are buffered and every flush sends them as one message.
type wsSSEWriter struct {
	ctx      context.Context
	c        *websocket.Conn
	h        http.Header
	buf      bytes.Buffer
	deadline time.Time
}

func (w *wsSSEWriter) Header() http.Header         { return w.h }
func (w *wsSSEWriter) WriteHeader(int)             {}
func (w *wsSSEWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *wsSSEWriter) SetWriteDeadline(t time.Time) error {
	w.deadline = t
	return nil
}
func (w *wsSSEWriter) FlushError() error {
	if w.buf.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(w.ctx)
	if !w.deadline.IsZero() {
		ctx, cancel = context.WithDeadline(w.ctx, w.deadline)
	}
	defer cancel()
	err := w.c.Write(ctx, websocket.MessageText, w.buf.Bytes())
	w.buf.Reset()
	return err
}

// Prototype rows in §1.
const (
	PathExtensionProto     = "extension, prototype: results over a WebSocket"
	PathExtensionProtoBoth = "extension, prototype: requests and results over WebSockets"
)

// StartProto starts another browser with a patched extension copy (results
// over a WebSocket; with eventsToo, the event stream too) and returns its
// path, aimed at its client. CloseProto stops every prototype.
func (w *World) StartProto(ctx context.Context, eventsToo bool) (*Path, error) {
	dir, err := CopyExtension(w.Root, w.Server.URL)
	if err != nil {
		return nil, err
	}
	w.protoClosers = append(w.protoClosers, func() { os.RemoveAll(dir) })
	if err := PatchRelayForProto(dir, eventsToo); err != nil {
		return nil, err
	}
	name, conv := PathExtensionProto, "bench-ext-proto"
	if eventsToo {
		name, conv = PathExtensionProtoBoth, "bench-ext-proto-both"
	}
	known := map[string]bool{}
	for _, c := range w.Server.Hub.Roster() {
		known[c.ClientID] = true
	}
	br, err := StartChromium(ctx, dir)
	if err != nil {
		return nil, err
	}
	w.protoClosers = append(w.protoClosers, br.Close)
	id, err := w.Server.waitNewClient(ctx, eventhub.InterfaceChromeExtension, known)
	if err != nil {
		return nil, err
	}
	inv := w.Server.Invocation(conv, eventhub.InterfaceMacOS)
	inv.TargetClientID = id
	be := w.Server.Proxy.NewExtensionBackend(inv, hostproxyOpts)
	w.protoClosers = append(w.protoClosers, func() { be.Close() })
	p, _ := json.Marshal(map[string]any{"url": w.Fix.URL("/page"), "active": true})
	if _, err := be.Send(ctx, bb.Command{Method: "Vellum.createTab", Params: p}); err != nil {
		return nil, fmt.Errorf("benchreport: prototype: %w", err)
	}
	s := w.Server
	path := &Path{Name: name,
		Note: "as the extension backend, with a patched copy of relay.js (not shipped; see Analysis)",
		Send: func(ctx context.Context, m string, p json.RawMessage) (json.RawMessage, error) {
			return be.Send(ctx, bb.Command{Method: m, Params: p})
		},
		Inside: func() (float64, float64, bool) { return s.Timing(s.LastRequestID()) },
	}
	// The first results travel by fetch while the socket opens.
	for range 3 {
		if _, err := path.Send(ctx, "Runtime.evaluate", EvalParams); err != nil {
			return nil, fmt.Errorf("benchreport: prototype: %w", err)
		}
	}
	return path, nil
}

// CloseProto stops the prototype's browser and removes its path.
func (w *World) CloseProto() {
	for i := len(w.protoClosers) - 1; i >= 0; i-- {
		w.protoClosers[i]()
	}
	w.protoClosers = nil
	var keep []*Path
	for _, p := range w.Paths {
		if p.Name != PathExtensionProto && p.Name != PathExtensionProtoBoth {
			keep = append(keep, p)
		}
	}
	w.Paths = keep
}
