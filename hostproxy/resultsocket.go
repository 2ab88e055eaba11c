package hostproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/coder/websocket"
)

// DefaultSocketAuthTimeout is how long ResultSocketHandler waits for the
// auth message when SocketOptions.AuthTimeout is zero.
const DefaultSocketAuthTimeout = 5 * time.Second

// DefaultSocketPingInterval is how often a subscribed result socket pings
// its client when SocketOptions.PingInterval is zero.
const DefaultSocketPingInterval = 7 * time.Second

// socketWriteTimeout bounds each reply written on a result socket; a client
// that does not read its replies for this long loses the socket.
const socketWriteTimeout = 10 * time.Second

// VerifyFunc authenticates the auth message of a result socket: token is the
// client's access token (the one it sends as a bearer token on the HTTP
// routes), clientID the client id it claims and interfaceID the interface
// it claims ("" when the message names none). It returns the actor the
// token acts for and the interface a subscribed client is registered as —
// the claimed one or, when none is claimed, the token's; "" registers it as
// chrome-extension — or an error (the socket is then closed with policy
// violation; the error text is sent as the close reason, so it must not
// contain the token). A token issued for another client id or another
// interface must be refused, as the HTTP routes refuse it: the interface
// decides what the hub trusts the client with. It must be safe for
// concurrent use. hostproxy/auth.Authority.VerifyClient is one.
type VerifyFunc func(ctx context.Context, token, clientID, interfaceID string) (actor, iface string, err error)

// SocketOptions configures ResultSocketHandler.
type SocketOptions struct {
	// Verify checks the auth message. Required: ResultSocketHandler panics
	// without it.
	Verify VerifyFunc
	// AllowedOrigins are the exact origins ("chrome-extension://<id>") a
	// browser's handshake may carry. A handshake without Origin (a
	// non-browser client) is allowed; one with any other Origin is refused
	// with 403 before the upgrade. Empty: only Origin-less clients.
	AllowedOrigins []string
	// LoopbackOnly refuses (403) a handshake whose TCP peer is not a
	// loopback address. Set it when the server listens on loopback only.
	LoopbackOnly bool
	// AuthTimeout bounds the wait for the auth message; 0 means
	// DefaultSocketAuthTimeout (5 s).
	AuthTimeout time.Duration
	// Subscriber, when set, offers the subscribed mode: a client that asks
	// for it in its auth message gets its hub events on the socket and
	// sends its CDP events and invalidations there too, so one socket
	// replaces GET /v1/events and every POST (see ResultSocketHandler).
	// The hub the Proxy publishes to (an *eventhub.InProcess, or a
	// *natshub.Hub) is one. Nil: results only, as before.
	Subscriber Subscriber
	// PingInterval is the liveness ping period of a subscribed socket
	// (each pong is activity of the client, HUB-5); 0 means
	// DefaultSocketPingInterval (7 s).
	PingInterval time.Duration
}

// Subscriber registers a hub client in process (HUB-1); the subscribed
// mode of a result socket registers its client through it.
// *eventhub.InProcess and *natshub.Hub implement it.
type Subscriber interface {
	Subscribe(eventhub.SubscribeRequest) (*eventhub.Subscription, error)
}

// Transport names how a result reached the Proxy, in ResultReceipt.
type Transport string

// The result transports.
const (
	TransportHTTP      Transport = "http"
	TransportWebSocket Transport = "websocket"
)

// ResultReceipt describes one result that passed the checks, for
// Options.OnResult.
type ResultReceipt struct {
	RequestID string
	// ClientID is the posting client (the X-Vellum-Client-Id header, or the
	// client id of the socket's auth message).
	ClientID  string
	Transport Transport
	// Raw is the body or socket message as received. It is only valid
	// during the call and must not be modified; it may carry fields the
	// proxy ignores (the reference extension's timings, for example).
	Raw []byte
}

// socketMessage is every client → server message of a result socket:
// {"type":"auth","token","clientId","subscribe"?,"interfaceId"?,
// "machineName"?,"lastEventId"?} first, then
// {"type":"result","requestId","content","isError"}.
type socketMessage struct {
	Type     string `json:"type"`
	Token    string `json:"token,omitempty"`
	ClientID string `json:"clientId,omitempty"`
	ResultBody
	// The subscribed mode's request and its registration fields (the
	// headers of GET /v1/events).
	Subscribe   bool   `json:"subscribe,omitempty"`
	InterfaceID string `json:"interfaceId,omitempty"`
	MachineName string `json:"machineName,omitempty"`
	LastEventID string `json:"lastEventId,omitempty"`
}

// socketReply is every server → client message after the auth message.
type socketReply struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId,omitempty"`
	ClientID  string `json:"clientId,omitempty"`
	Status    int    `json:"status,omitempty"`
	Code      string `json:"code,omitempty"`
	Error     string `json:"error,omitempty"`
	// Subscribed, on the ready reply, says the socket carries everything.
	Subscribed bool `json:"subscribed,omitempty"`
	// MaxBodyBytes, on the ready reply, is the largest message the server
	// reads on the socket (Options.MaxBodyBytes); a larger one closes the
	// socket with 1009, so a client sends such a result's error instead, as
	// it does after a POST refused with 413.
	MaxBodyBytes int64 `json:"maxBodyBytes,omitempty"`
}

// ResultSocketHandler serves GET /v1/host-browser-result/ws: a WebSocket on
// which a client sends its results instead of one POST
// /v1/host-browser-result each (a browser WebSocket message costs a fraction
// of a fetch from an MV3 service worker). The handshake is refused with 403
// when its Origin is not in opts.AllowedOrigins or, with opts.LoopbackOnly,
// its peer is not loopback. Browsers cannot set headers on a WebSocket, so
// the route takes no bearer header: mount it outside the auth middleware.
//
// The first message must be {"type":"auth","token","clientId"} within
// opts.AuthTimeout; opts.Verify checks it. Anything else — a timeout,
// malformed JSON, another type, a refused token — closes the socket with
// status 1008 (policy violation). On success the server answers
// {"type":"ready","clientId"}; the client id and the actor are then fixed
// for the socket's life.
//
// Each later message {"type":"result","requestId","content","isError"} goes
// through the same checks as POST /v1/host-browser-result (PXY-4), with the
// socket's client id and actor in place of the header and the request's
// actor, and is answered {"type":"accepted","requestId"} or
// {"type":"error","requestId","status","code","error"} with the status and
// code the HTTP route would have answered (400, 403, 404, 409). A refused
// message leaves the request pending and the socket open. Every message
// counts as activity of the client (Hub.Touch, HUB-5). A message larger than
// Options.MaxBodyBytes closes the socket with status 1009 (message too big).
// Closing the socket affects no pending request; Close on the Proxy closes
// every socket (status 1001).
//
// Subscribed mode (offered when opts.Subscriber is set): an auth message
// with "subscribe":true (and optionally "interfaceId" — checked by
// opts.Verify against the token's; when absent, the token's interface, else
// chrome-extension — "machineName" and "lastEventId", the values GET
// /v1/events takes from its headers) registers the socket as the client's
// hub stream, replacing an open one, and is answered
// {"type":"ready","clientId","subscribed":true}. The socket then carries,
// in the remote device socket's framing (package hostproxy/remote): every
// hub event for the client as {"type":"assistant_event","event":<envelope>}
// (requests and cancels), and from the client results as above plus
// {"type":"host_browser_event",…} and
// {"type":"host_browser_session_invalidated",…}, handled as
// HandleClientFrame describes. The server pings every opts.PingInterval.
// A failed registration closes with 1008 (another actor's client id, a bad
// field) or 1013; the registration's end (a newer stream of the client,
// shedding) closes with 1001 and the socket's end ends the registration,
// failing the client's commands in flight as a dropped stream does; a
// result frame over the cap (1009) first fails its own command with
// payload_too_large when its requestId comes before the cut
// (FailOversizeFrame). A server without opts.Subscriber answers ready
// without "subscribed", and the client keeps its event stream.
func (p *Proxy) ResultSocketHandler(opts SocketOptions) http.Handler {
	if opts.Verify == nil {
		panic("hostproxy: ResultSocketHandler: SocketOptions.Verify is nil")
	}
	if opts.AuthTimeout <= 0 {
		opts.AuthTimeout = DefaultSocketAuthTimeout
	}
	origins := make(map[string]bool, len(opts.AllowedOrigins))
	var hosts []string
	for _, o := range opts.AllowedOrigins {
		o = strings.TrimRight(strings.TrimSpace(o), "/")
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			origins[o] = true
			hosts = append(hosts, u.Host)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.LoopbackOnly && !loopbackPeer(r.RemoteAddr) {
			p.log.Warn("result socket refused: non-loopback peer", "peer", r.RemoteAddr)
			writeError(w, http.StatusForbidden, "local_only", "endpoint is local-only")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !origins[strings.TrimRight(o, "/")] {
			p.log.Warn("result socket refused: origin not allowed", "origin", o, "peer", r.RemoteAddr)
			writeError(w, http.StatusForbidden, "origin_not_allowed", "origin is not allowed")
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: hosts})
		if err != nil {
			return // Accept has answered
		}
		defer c.CloseNow()
		c.SetReadLimit(p.maxBody)
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		// On Close; no goroutine waits for it per socket.
		stop := context.AfterFunc(p.doneCtx, func() {
			c.Close(websocket.StatusGoingAway, "proxy closed")
			cancel()
		})
		defer stop()
		p.serveSocket(ctx, c, opts)
	})
}

// serveSocket runs one authenticated result socket until it ends.
func (p *Proxy) serveSocket(ctx context.Context, c *websocket.Conn, opts SocketOptions) {
	auth, actor, err := p.socketAuth(ctx, c, opts)
	if err != nil {
		p.log.Warn("result socket refused", "reason", err.Error())
		c.Close(websocket.StatusPolicyViolation, truncate(err.Error(), 120))
		return
	}
	clientID := auth.ClientID
	if auth.Subscribe && opts.Subscriber != nil {
		p.serveSubscribed(ctx, c, opts, auth, actor)
		return
	}
	if !p.reply(ctx, c, socketReply{Type: wire.SocketReady, ClientID: clientID, MaxBodyBytes: p.maxBody}) {
		return
	}
	p.hub.Touch(clientID)
	var buf bytes.Buffer
	for {
		data, err := readMessage(ctx, c, &buf)
		if err != nil {
			return // closed by the client, too big (1009 sent), or ctx done
		}
		p.hub.Touch(clientID)
		m, err := p.decodeSocketMessage(data)
		if err != nil {
			if !p.reply(ctx, c, socketReply{Type: wire.SocketError, Status: http.StatusBadRequest, Code: "malformed_body",
				Error: fmt.Sprintf("hostproxy: malformed result message: %v", err)}) {
				return
			}
			continue
		}
		var rej *resultReject
		switch {
		case m.Type != wire.SocketResult:
			rej = &resultReject{http.StatusBadRequest, "bad_type", fmt.Sprintf("message type %q is not %q", m.Type, wire.SocketResult)}
		case m.RequestID == "":
			rej = &resultReject{http.StatusBadRequest, "missing_request_id", "requestId is required"}
		default:
			rej = p.acceptResult(m.ResultBody, clientID, actor, TransportWebSocket, data)
		}
		out := socketReply{Type: wire.SocketAccepted, RequestID: m.RequestID}
		if rej != nil {
			p.log.Warn("host_browser post refused", "route", wire.PathHostBrowserResultSocket, "status", rej.status, "code", rej.code, "clientId", clientID)
			out = socketReply{Type: wire.SocketError, RequestID: m.RequestID, Status: rej.status, Code: rej.code, Error: rej.msg}
		}
		if m.esc != nil || buf.Cap() > 1<<20 {
			// A large content was decoded over buf's bytes and may now be
			// the caller's result: never read into them again.
			buf = bytes.Buffer{} // do not keep a screenshot-sized buffer per idle socket
		}
		if !p.reply(ctx, c, out) {
			return
		}
	}
}

// decodeSocketMessage decodes a result socket message read into a buffer of
// this socket's; a large content stays escaped there, as decodeResultOwned
// leaves it.
func (p *Proxy) decodeSocketMessage(data []byte) (socketMessage, error) {
	type wire struct {
		Type      string  `json:"type"`
		Token     string  `json:"token,omitempty"`
		ClientID  string  `json:"clientId,omitempty"`
		RequestID string  `json:"requestId"`
		Content   literal `json:"content"`
		IsError   bool    `json:"isError"`
	}
	var w wire
	if !decodeFast(data, fastMessage{strs: map[string]*string{"type": &w.Type, "token": &w.Token, "clientId": &w.ClientID,
		"requestId": &w.RequestID}, content: &w.Content, isError: &w.IsError}) {
		w = wire{}
		if err := json.Unmarshal(data, &w); err != nil {
			return socketMessage{}, err
		}
	}
	b, err := contentOf(w.Content)
	if err != nil {
		return socketMessage{}, err
	}
	b.RequestID, b.IsError = w.RequestID, w.IsError
	return socketMessage{Type: w.Type, Token: w.Token, ClientID: w.ClientID, ResultBody: b}, nil
}

// socketAuth reads and verifies the auth message.
func (p *Proxy) socketAuth(ctx context.Context, c *websocket.Conn, opts SocketOptions) (auth socketMessage, actor string, err error) {
	// A context deadline would drop the connection without a close frame;
	// the timer closes it with policy violation instead.
	late := time.AfterFunc(opts.AuthTimeout, func() {
		c.Close(websocket.StatusPolicyViolation, "hostproxy: no auth message in time")
	})
	// The auth message is small; a larger first message is refused here
	// rather than read whole.
	c.SetReadLimit(64 << 10)
	_, data, err := c.Read(ctx)
	if !late.Stop() {
		return auth, "", errors.New("hostproxy: no auth message in time")
	}
	c.SetReadLimit(p.maxBody)
	if err != nil {
		return auth, "", fmt.Errorf("hostproxy: reading the auth message: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, opts.AuthTimeout)
	defer cancel()
	var m socketMessage
	if err := json.Unmarshal(data, &m); err != nil || m.Type != wire.SocketAuth {
		return auth, "", errors.New("hostproxy: the first message must be {\"type\":\"auth\",\"token\",\"clientId\"}")
	}
	if m.Token == "" || m.ClientID == "" {
		return auth, "", errors.New("hostproxy: auth message needs token and clientId")
	}
	actor, m.InterfaceID, err = opts.Verify(actx, m.Token, m.ClientID, m.InterfaceID)
	if err != nil {
		return auth, "", err
	}
	m.Token = "" // not kept past the check
	return m, actor, nil
}

// readMessage reads one message into buf (reset first) and returns its
// bytes, which stay valid until the next call.
func readMessage(ctx context.Context, c *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
	_, rd, err := c.Reader(ctx)
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// reply writes one JSON message; false when the socket is done.
func (p *Proxy) reply(ctx context.Context, c *websocket.Conn, v socketReply) bool {
	data, _ := json.Marshal(v)
	wctx, cancel := context.WithTimeout(ctx, socketWriteTimeout)
	defer cancel()
	return c.Write(wctx, websocket.MessageText, data) == nil
}

func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// resultReject is why a result was refused: the HTTP status, the route's
// error code and a message.
type resultReject struct {
	status int
	code   string
	msg    string
}

// acceptResult runs the PXY-4 checks on a decoded result sent by clientID
// (empty when the post named none) acting for actor, and delivers it. It is
// the one code path of POST /v1/host-browser-result and the result socket;
// nil means accepted. A refused result leaves the request pending.
func (p *Proxy) acceptResult(body ResultBody, clientID, actor string, tr Transport, raw []byte) *resultReject {
	if p.relay != nil {
		if _, ok := p.Lookup(body.RequestID); !ok {
			// Not waiting here: the caller may wait on another replica
			// (DHUB-3). The content leaves unescaped, over data's bytes.
			body.resolve()
			if rej, ok := p.relayResult(body, clientID, actor, tr); ok {
				return rej
			}
			raw = nil // resolve wrote over it
		}
	}
	return p.acceptLocal(body, clientID, actor, tr, raw)
}

// acceptLocal is acceptResult for a request pending in this Proxy.
func (p *Proxy) acceptLocal(body ResultBody, clientID, actor string, tr Transport, raw []byte) *resultReject {
	return p.acceptChecked(body, clientID, actor, tr, raw, true)
}

// acceptChecked is acceptLocal; touch false leaves the client's activity
// to the replica that relayed the result.
func (p *Proxy) acceptChecked(body ResultBody, clientID, actor string, tr Transport, raw []byte, touch bool) *resultReject {
	in, ok := p.Lookup(body.RequestID)
	if !ok {
		return &resultReject{http.StatusNotFound, "unknown_request",
			fmt.Sprintf("no pending request %q (unknown or already answered)", body.RequestID)}
	}
	if in.Kind != KindHostBrowser {
		return &resultReject{http.StatusConflict, "wrong_kind",
			fmt.Sprintf("request %q is a %s interaction, not host_browser", body.RequestID, in.Kind)}
	}
	if in.TargetClientID != "" {
		if clientID == "" {
			return &resultReject{http.StatusBadRequest, "missing_client_id",
				fmt.Sprintf("%s header is required for a targeted request", wire.HeaderClientID)}
		}
		if clientID != in.TargetClientID {
			return &resultReject{http.StatusForbidden, "wrong_client",
				fmt.Sprintf("request %q was not sent to this client", body.RequestID)}
		}
	}
	if in.TargetActor != "" && actor != in.TargetActor {
		return &resultReject{http.StatusForbidden, "wrong_actor",
			fmt.Sprintf("request %q belongs to another actor", body.RequestID)}
	}
	if p.onResult != nil {
		p.onResult(ResultReceipt{RequestID: body.RequestID, ClientID: clientID, Transport: tr, Raw: raw})
	}
	body.resolve() // after OnResult: it decodes over raw's bytes
	if !p.deliver(body) {
		return &resultReject{http.StatusNotFound, "unknown_request",
			fmt.Sprintf("no pending request %q (unknown or already answered)", body.RequestID)}
	}
	if touch && clientID != "" {
		p.hub.Touch(clientID)
	}
	return nil
}
