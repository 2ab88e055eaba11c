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

// VerifyFunc authenticates the auth message of a result socket: the
// client's access token, the client id it claims and the interface it
// claims ("" for none). It returns the actor the token acts for and the
// interface a subscribed client is registered as (the claimed one, else the
// token's; "" means chrome-extension), or an error, sent as the close
// reason, so it must not contain the token. A token issued for another
// client id or interface must be refused. It must be safe for concurrent
// use; hostproxy/auth.Authority.VerifyClient is one.
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
	// replaces GET /v1/events and every POST. The hub the Proxy publishes
	// to is one. Nil: results only.
	Subscriber Subscriber
	// PingInterval is the liveness ping period of a subscribed socket
	// (each pong is activity of the client); 0 means
	// DefaultSocketPingInterval (7 s).
	PingInterval time.Duration
}

// Subscriber registers a hub client in process; the subscribed mode of a
// result socket registers its client through it.
// *eventhub.InProcess and *natshub.Hub implement it.
type Subscriber interface {
	Subscribe(eventhub.SubscribeRequest) (*eventhub.Subscription, error)
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

// ResultSocketHandler serves GET /v1/host-browser-result/ws, a WebSocket on
// which one client sends its results instead of one POST each. Mount it
// outside the auth middleware: the first message authenticates
// ({"type":"auth","token","clientId"}, checked by opts.Verify within
// opts.AuthTimeout, else closed 1008) and fixes the client and actor for the
// socket's life. Each result message then gets the result route's checks
// (Mount) and is answered accepted or error with the route's status and
// code; a refused one leaves its request and the socket open. A message
// over Options.MaxBodyBytes closes the socket (1009), first failing its
// request when it names one; Close closes every socket (1001). With
// opts.Subscriber the client may ask for the subscribed mode, in which the
// socket also carries its hub events and its CDP events (the frames of
// ClientFrames.Handle). The handshake is refused 403 for an Origin outside
// opts.AllowedOrigins or, with opts.LoopbackOnly, a non-loopback peer. It
// panics when opts.Verify is nil.
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
	return &resultSocket{p: p, opts: opts, origins: origins, hosts: hosts}
}

// resultSocket is the result socket adapter: one per ResultSocketHandler,
// serving every socket of that route.
type resultSocket struct {
	p       *Proxy
	opts    SocketOptions
	origins map[string]bool
	hosts   []string
}

func (s *resultSocket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := s.p
	if s.opts.LoopbackOnly && !loopbackPeer(r.RemoteAddr) {
		p.log.Warn("result socket refused: non-loopback peer", "peer", r.RemoteAddr)
		writeError(w, http.StatusForbidden, "local_only", "endpoint is local-only")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !s.origins[strings.TrimRight(o, "/")] {
		p.log.Warn("result socket refused: origin not allowed", "origin", o, "peer", r.RemoteAddr)
		writeError(w, http.StatusForbidden, "origin_not_allowed", "origin is not allowed")
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.hosts})
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
	s.serve(ctx, c)
}

// serve runs one result socket until it ends.
func (s *resultSocket) serve(ctx context.Context, c *websocket.Conn) {
	p := s.p
	auth, actor, err := s.auth(ctx, c)
	if err != nil {
		p.log.Warn("result socket refused", "reason", err.Error())
		c.Close(websocket.StatusPolicyViolation, truncate(err.Error(), 120))
		return
	}
	clientID := auth.ClientID
	if auth.Subscribe && s.opts.Subscriber != nil {
		s.serveSubscribed(ctx, c, auth, actor)
		return
	}
	if !reply(ctx, c, socketReply{Type: wire.SocketReady, ClientID: clientID, MaxBodyBytes: p.maxBody}) {
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
		m, err := decodeSocketMessage(data)
		if err != nil {
			if !reply(ctx, c, socketReply{Type: wire.SocketError, Status: http.StatusBadRequest, Code: "malformed_body",
				Error: fmt.Sprintf("hostproxy: malformed result message: %v", err)}) {
				return
			}
			continue
		}
		var rej *refusal
		switch {
		case m.Type != wire.SocketResult:
			rej = &refusal{http.StatusBadRequest, "bad_type", fmt.Sprintf("message type %q is not %q", m.Type, wire.SocketResult)}
		case m.RequestID == "":
			rej = &refusal{http.StatusBadRequest, "missing_request_id", "requestId is required"}
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
		if !reply(ctx, c, out) {
			return
		}
	}
}

// decodeSocketMessage decodes a result socket message read into a buffer of
// this socket's; a large content stays escaped there, as decodeResultOwned
// leaves it.
func decodeSocketMessage(data []byte) (socketMessage, error) {
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

// auth reads and verifies the auth message.
func (s *resultSocket) auth(ctx context.Context, c *websocket.Conn) (auth socketMessage, actor string, err error) {
	opts := s.opts
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
	c.SetReadLimit(s.p.maxBody)
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
func reply(ctx context.Context, c *websocket.Conn, v socketReply) bool {
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
