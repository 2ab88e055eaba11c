package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
)

// writeTimeout bounds each frame the server writes; a client that does not
// read for this long loses its socket.
const writeTimeout = 10 * time.Second

// Close codes of a remote socket besides the standard ones.
const (
	// StatusRevoked: the device's grant was revoked or expired.
	StatusRevoked websocket.StatusCode = 4401
	// StatusReplaced: the device opened a newer socket.
	StatusReplaced websocket.StatusCode = 4409
)

type endKind int

const (
	endGoingAway endKind = iota
	endRevoked
	endGrantCheck
	endReplaced
	endHub
	endDisconnect
)

func (k endKind) status() websocket.StatusCode {
	switch k {
	case endRevoked:
		return StatusRevoked
	case endGrantCheck:
		return websocket.StatusInternalError
	case endReplaced:
		return StatusReplaced
	}
	return websocket.StatusGoingAway
}

// conn is one device's socket (or the upgrade that will become it).
type conn struct {
	s      *Server
	dev    Device
	ctx    context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	ws   *websocket.Conn
	sub  *eventhub.Subscription
	why  string
	kind endKind

	ui uiCalls // the UI channel's requests waiting for their answer
}

// end closes the socket: first the hub registration (so the proxy fails the
// commands in flight to it at once, with a transport error), then it tells
// the socket's goroutine to close the WebSocket with kind's status. It never
// blocks on the network. Safe to call more than once and before the upgrade
// finished; the first call's kind and reason win.
func (c *conn) end(kind endKind, reason string) {
	c.mu.Lock()
	first := c.why == ""
	if first {
		c.why, c.kind = reason, kind
	}
	sub := c.sub
	c.mu.Unlock()
	if !first {
		return
	}
	if sub != nil {
		sub.Close()
	}
	c.cancel()
}

func (c *conn) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why != ""
}

// errCapacity and errClosed are why claim refused a slot.
var (
	errCapacity = errors.New("remote: at browser capacity")
	errClosed   = errors.New("remote: server closed")
)

// claim takes a capacity slot for dev: a device already online
// replaces its own connection; a new device at capacity is refused. The
// caller owns one count of s.wg and gives it back with release.
func (s *Server) claim(dev Device) (c, old *conn, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errClosed
	}
	old = s.slots[dev.DeviceID]
	if old == nil && len(s.slots) >= s.limits.MaxConnections {
		return nil, nil, errCapacity
	}
	ctx, cancel := context.WithCancel(context.Background())
	c = &conn{s: s, dev: dev, ctx: ctx, cancel: cancel}
	s.slots[dev.DeviceID] = c
	s.wg.Add(1) // under mu, before Close can start waiting
	return c, old, nil
}

// giveBack returns the slot c took from old to old when c never became a
// socket (its upgrade failed) and old is still live: a request that carries
// a device's credential but fails the upgrade must not orphan the device's
// open socket (it would drop out of Online, of the capacity count and of
// Revoke's and Disconnect's reach, and Close would wait for it).
func (s *Server) giveBack(c, old *conn) {
	if old == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Under s.mu, as old's release: an old that ends from here on finds its
	// slot again and frees it.
	if s.slots[c.dev.DeviceID] == c && !old.ended() {
		s.slots[c.dev.DeviceID] = old
	}
}

// release frees c's slot unless a newer connection of the device took it.
func (s *Server) release(c *conn) {
	s.mu.Lock()
	if s.slots[c.dev.DeviceID] == c {
		delete(s.slots, c.dev.DeviceID)
	}
	s.mu.Unlock()
	s.wg.Done()
}

// Online returns the device ids with an open socket.
func (s *Server) Online() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.slots))
	for id, c := range s.slots {
		c.mu.Lock()
		up := c.sub != nil && c.why == ""
		c.mu.Unlock()
		if up {
			out = append(out, id)
		}
	}
	return out
}

// Disconnect closes the device's open socket with status 1001 (going
// away), without revoking it: the extension reconnects with its
// credential. The socket's commands in flight fail with a transport error
// and the extension releases the tabs of its tasks. It reports
// whether the device had a socket. Safe for concurrent use.
func (s *Server) Disconnect(deviceID string) bool {
	s.mu.Lock()
	c := s.slots[deviceID]
	s.mu.Unlock()
	if c == nil || c.ended() {
		return false
	}
	c.end(endDisconnect, "disconnected by the server")
	return true
}

// deviceToken returns the token of the one bsk-auth subprotocol of r:
// every Sec-WebSocket-Protocol value, split at commas, must be that
// one value.
func deviceToken(r *http.Request) (proto, token string, ok bool) {
	var all []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			all = append(all, strings.TrimSpace(p))
		}
	}
	if len(all) != 1 {
		return "", "", false
	}
	token, ok = strings.CutPrefix(all[0], wire.SubprotocolAuthPrefix)
	return all[0], token, ok && token != ""
}

// SocketHandler serves GET PATH, the remote device socket. Before
// the upgrade it refuses: a query string (400: credentials never travel in
// a URL), an Origin that is not chrome-extension:// (403; an allowed Origin
// alone never authorizes), a missing, duplicated or malformed
// Sec-WebSocket-Protocol or a token that is not a current device
// credential of this endpoint — a pairing secret is not one (401), a failed
// store read (503), and a new device at capacity (503 + Retry-After). The
// selected subprotocol is echoed.
//
// The socket is then an ordinary hub client: it registers under
// the device's BrowserID with interface chrome-extension (so the selector's
// candidate for it is extension) and the device's actor, replacing an older
// socket of the same device. The server first sends
// {"type":"ready","deviceId","clientId","maxBodyBytes"}, then every hub
// event for the client as {"type":"assistant_event","event":<envelope>}.
// maxBodyBytes is the largest frame it reads (the Proxy's MaxBodyBytes): a
// client answers a larger result with a payload_too_large error instead.
// A larger frame that arrives closes the socket with 1009; when it is a
// result whose requestId comes before the cut, that command fails at once
// with payload_too_large (ClientFrames.FailOversize), the socket's other
// commands in flight with a transport error. The client sends
// {"type":"result","requestId","content","isError"} (answered
// {"type":"accepted","requestId"} or {"type":"error",…} with the HTTP
// route's status and code), {"type":"host_browser_event","method","params",
// "sessionId"?} and {"type":"host_browser_session_invalidated",…} (answered
// only when refused). Every result, event and invalidation is bound to the
// device's client id and actor: a frame whose clientId names another
// client, and a result answering another client's request, are refused
// with 403 client_mismatch. A frame without a type is the answer to
// a UI channel request (see UI.Call), {"id","result"|"error"}: one without
// an id is refused with 400 missing_type, a malformed one with 400
// malformed_body, and one nobody waits for (an unknown id, or a call that
// already ended) with 404 unknown_request naming the id. The
// socket closes, failing its commands in flight with a transport error, on
// revocation or expiry (status 4401),
// a failed grant read (1011), a newer socket of the device (4409), or Close
// (1001).
//
// The upgrade takes over the connection, so the handler must get the
// server's own http.ResponseWriter, or a wrapper that implements
// http.Hijacker or has an Unwrap() http.ResponseWriter method leading to
// one (http.ResponseController's convention). Given a writer that leads to
// no http.Hijacker (a middleware's recording writer, say), it refuses every
// upgrade with 500 not_hijackable and logs an error naming the cause,
// before reading the store; a browser reports that refusal as close code
// 1006, so the server log is where it shows.
func (s *Server) SocketHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			s.refuse(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use GET with a WebSocket upgrade")
			return
		}
		if !hijackable(w) {
			s.log.Error("remote socket cannot upgrade: the http.ResponseWriter it was given cannot be hijacked; "+
				"mount SocketHandler without a wrapping writer, or give the wrapper Hijack or Unwrap",
				"writer", fmt.Sprintf("%T", w))
			s.refuse(w, r, http.StatusInternalServerError, "not_hijackable", "the server cannot upgrade this connection")
			return
		}
		if r.URL.RawQuery != "" {
			s.refuse(w, r, http.StatusBadRequest, "query_not_allowed", "no query string is accepted; the credential goes in Sec-WebSocket-Protocol")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !strings.HasPrefix(o, "chrome-extension://") {
			s.refuse(w, r, http.StatusForbidden, "origin_not_allowed", "only extension origins may connect")
			return
		}
		proto, token, ok := deviceToken(r)
		if !ok {
			s.refuse(w, r, http.StatusUnauthorized, "unauthorized", "exactly one Sec-WebSocket-Protocol bsk-auth.DEVICE_TOKEN is required")
			return
		}
		dev, err := s.store.Authenticate(r.Context(), s.endpoint, token)
		switch {
		case errors.Is(err, ErrUnauthorized):
			s.refuse(w, r, http.StatusUnauthorized, "unauthorized", err.Error())
			return
		case err != nil:
			s.log.Error("device authentication could not read the store", "error", err)
			s.refuse(w, r, http.StatusServiceUnavailable, "store_error", "the grant store could not be read")
			return
		}
		c, old, err := s.claim(dev)
		switch {
		case errors.Is(err, errClosed):
			s.refuse(w, r, http.StatusServiceUnavailable, "closed", "the server is closing")
			return
		case err != nil:
			s.refuse(w, r, http.StatusServiceUnavailable, "capacity", "the server is at its browser capacity")
			return
		}
		defer s.release(c)
		defer c.end(endGoingAway, "closed")
		// The Origin was checked above (none, or an extension's, which never
		// matches the server's host); the library's same-host check would
		// refuse every extension.
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{proto}, InsecureSkipVerify: true})
		if err != nil {
			s.log.Warn("remote socket upgrade failed", "deviceId", dev.DeviceID, "peer", r.RemoteAddr, "error", err)
			s.giveBack(c, old) // the device's live socket keeps its slot
			return             // Accept has answered
		}
		if old != nil {
			old.end(endReplaced, "replaced by a newer connection of this device")
		}
		s.serve(c, ws)
	})
}

// serve runs one authenticated socket until it ends.
func (s *Server) serve(c *conn, ws *websocket.Conn) {
	defer ws.CloseNow()
	maxBody := c.s.proxy.ClientFrames().MaxBodyBytes()
	ws.SetReadLimit(maxBody)
	sub, err := s.hub.Subscribe(eventhub.SubscribeRequest{
		ClientID: c.dev.BrowserID, InterfaceID: wire.InterfaceChromeExtension,
		MachineName: c.dev.Label, Actor: c.dev.Actor,
	})
	if err != nil {
		s.log.Warn("remote socket could not register with the hub", "deviceId", c.dev.DeviceID, "error", err)
		ws.Close(websocket.StatusTryAgainLater, "hub registration failed")
		return
	}
	c.mu.Lock()
	c.ws, c.sub = ws, sub
	ended := c.why != ""
	c.mu.Unlock()
	if ended { // revoked or replaced during the upgrade
		sub.Close()
		c.mu.Lock()
		kind, why := c.kind, c.why
		c.mu.Unlock()
		ws.Close(kind.status(), why)
		return
	}
	s.log.Info("remote device connected", "deviceId", c.dev.DeviceID, "clientId", c.dev.BrowserID)
	defer s.log.Info("remote device disconnected", "deviceId", c.dev.DeviceID, "clientId", c.dev.BrowserID)
	if !c.write(serverFrame{Type: wire.SocketReady, DeviceID: c.dev.DeviceID, ClientID: c.dev.BrowserID, MaxBodyBytes: maxBody}) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); c.pump(sub) }()
	go func() { defer wg.Done(); c.keepAlive() }()
	go func() { defer wg.Done(); c.read(); c.end(endGoingAway, "client gone") }()
	<-c.ctx.Done()
	c.mu.Lock()
	kind, why := c.kind, c.why
	c.mu.Unlock()
	ws.Close(kind.status(), why) // bounded by the library's close handshake timeout
	ws.CloseNow()
	wg.Wait()
}

// serverFrame is every server → client frame besides the hub events.
type serverFrame struct {
	Type      string          `json:"type"`
	DeviceID  string          `json:"deviceId,omitempty"`
	ClientID  string          `json:"clientId,omitempty"`
	RequestID string          `json:"requestId,omitempty"`
	Status    int             `json:"status,omitempty"`
	Code      string          `json:"code,omitempty"`
	Error     string          `json:"error,omitempty"`
	Event     json.RawMessage `json:"event,omitempty"`
	// MaxBodyBytes, on the ready frame, is the largest frame the server
	// reads (the Proxy's MaxBodyBytes).
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
}

func (c *conn) write(f serverFrame) bool {
	data, _ := json.Marshal(f)
	return c.writeRaw(data)
}

func (c *conn) writeRaw(data []byte) bool {
	c.mu.Lock()
	ws := c.ws
	c.mu.Unlock()
	// Not c.ctx: the library drops the connection, without a close frame,
	// when a write's context ends mid-write, and c.ctx ends just before
	// serve sends the close status the client must see (4401, 4409).
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, data); err != nil {
		c.end(endGoingAway, "write failed")
		return false
	}
	return true
}

// pump writes the client's hub events until the registration ends
// (replacement, shed, hub close) or the socket does.
func (c *conn) pump(sub *eventhub.Subscription) {
	var framer hostproxy.EventFramer
	for {
		env, err := sub.Next(c.ctx)
		if err != nil {
			c.end(endHub, "hub registration ended")
			return
		}
		data, err := framer.Frame(env)
		if err != nil {
			c.s.log.Error("remote socket could not encode a hub event", "deviceId", c.dev.DeviceID, "error", err)
			continue
		}
		if !c.writeRaw(data) {
			return
		}
	}
}

// keepAlive pings the client; each pong is activity.
func (c *conn) keepAlive() {
	t := time.NewTicker(c.s.ping)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		// Not c.ctx, as in writeRaw; serve's close ends a pending ping.
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err := c.ws.Ping(ctx)
		cancel()
		if err != nil {
			c.end(endGoingAway, "ping failed")
			return
		}
		c.s.proxy.Hub().Touch(c.dev.BrowserID)
	}
}

// read handles the client's frames until the socket ends.
func (c *conn) read() {
	var buf bytes.Buffer
	for {
		// Not c.ctx: a cancelled read would cut the connection before serve
		// sends its close status; serve's Close ends this read instead.
		_, rd, err := c.ws.Reader(context.Background())
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(rd); err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) {
				// The library closes the socket with 1009; the result it
				// cut fails typed now, before the registration's end fails
				// the rest of the device's commands as a transport error.
				c.s.proxy.ClientFrames().FailOversize(c.dev.BrowserID, c.dev.Actor, hostproxy.TransportRemote, buf.Bytes())
			}
			return
		}
		if c.ended() {
			return
		}
		data := buf.Bytes()
		c.s.proxy.Hub().Touch(c.dev.BrowserID)
		if reply, ok := c.handle(data); ok && !c.write(reply) {
			return
		}
		if buf.Cap() > 1<<20 {
			buf = bytes.Buffer{} // do not keep a screenshot-sized buffer per idle socket
		}
	}
}

// handle acts on one client frame and returns the reply, if one is due:
// the frames and their checks are the proxy's (hostproxy.ClientFrames.Handle),
// with the device's client id and actor as the binding.
func (c *conn) handle(data []byte) (serverFrame, bool) {
	var probe struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.Type == "" {
		return c.uiAnswer(data)
	}
	// ClientFrames.Handle logs its own refusals (client_mismatch among them).
	r, ok := c.s.proxy.ClientFrames().Handle(c.dev.BrowserID, c.dev.Actor, hostproxy.TransportRemote, data)
	return serverFrame{Type: r.Type, RequestID: r.RequestID, Status: r.Status, Code: r.Code, Error: r.Error}, ok
}

// uiAnswer hands a frame without a type, a UI channel answer, to its
// waiting call, and returns the error reply due when there is none.
func (c *conn) uiAnswer(data []byte) (serverFrame, bool) {
	var a uiAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return serverFrame{Type: wire.SocketError, Status: http.StatusBadRequest, Code: "malformed_body",
			Error: "remote: a frame without a type must be a UI channel answer {\"id\",\"result\"|\"error\"}"}, true
	}
	if a.ID == "" {
		return serverFrame{Type: wire.SocketError, Status: http.StatusBadRequest, Code: "missing_type",
			Error: "remote: a frame needs a type; only a UI channel answer, which has an id, has none"}, true
	}
	if !c.ui.answer(a) {
		return serverFrame{Type: wire.SocketError, RequestID: a.ID, Status: http.StatusNotFound, Code: "unknown_request",
			Error: fmt.Sprintf("remote: no UI channel request %.64q waits for an answer (unknown, or its call ended)", a.ID)}, true
	}
	return serverFrame{}, false
}

func loopbackPeer(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hijackable reports whether w, or a writer its Unwrap chain leads to, is an
// http.Hijacker: what the WebSocket upgrade needs.
func hijackable(w http.ResponseWriter) bool {
	for w != nil {
		switch t := w.(type) {
		case http.Hijacker:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			w = t.Unwrap()
		default:
			return false
		}
	}
	return false
}
