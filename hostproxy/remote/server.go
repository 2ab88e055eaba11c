package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
)

// DefaultCheckInterval is how often open sockets re-check their grants in
// the store: a revocation written by another process (the operator's CLI)
// closes its socket within this interval plus the read, which fails (and
// closes every socket) after 500 ms: well within a second.
const DefaultCheckInterval = 250 * time.Millisecond

// grantReadTimeout bounds one re-check's read of the store; a read that
// takes longer fails, closing every socket.
const grantReadTimeout = 500 * time.Millisecond

// DefaultPingInterval is how often the server pings an idle socket; a pong
// counts as the client's activity.
const DefaultPingInterval = 7 * time.Second

// maxAuthorizeBody caps the authorize route's request body.
const maxAuthorizeBody = 4096

// busyRetryAfter is the Retry-After of a 503 for store contention or
// capacity, in seconds.
const busyRetryAfter = "1"

// Subscriber registers a hub client in process: *eventhub.InProcess and
// *natshub.Hub implement it.
type Subscriber interface {
	Subscribe(eventhub.SubscribeRequest) (*eventhub.Subscription, error)
}

// Options configures New. Store, Proxy, Hub and Endpoint are required.
type Options struct {
	// Store holds the links and grants (shared with the operator's CLI).
	Store *Store
	// Proxy receives the results and events of remote clients; Hub
	// registers them as clients: the hub Proxy publishes to.
	Proxy *hostproxy.Proxy
	Hub   Subscriber
	// Endpoint is the public URL of the socket route
	// (wss://HOST/PATH, or ws://127.0.0.1:PORT/PATH for loopback
	// development). Links and grants are bound to it: another endpoint's
	// credential is refused.
	Endpoint string
	// ServiceName, optional, is the display name answered to the extension.
	ServiceName string
	// Limits are the server's limits; zero fields take the defaults.
	Limits Limits
	// Logger receives structured logs, never a credential; nil means
	// slog.Default(). The server's clock is the Store's (StoreOptions.Now):
	// link and grant expiries and the authorize rate limit follow it.
	Logger *slog.Logger
	// CheckInterval is the grant re-check period; 0 means
	// DefaultCheckInterval (250 ms).
	CheckInterval time.Duration
	// PingInterval is the liveness ping period; 0 means 7 s.
	PingInterval time.Duration
}

// Server is the remote connection server: the socket route
// (SocketHandler, at the endpoint's path) and the pairing and renewal route
// (AuthorizeHandler, at PATH/authorize) a host app mounts, plus the
// operator API (CreateLink, Devices, Revoke, RevokeAll). Create it with
// New; it is safe for concurrent use; Close ends every socket.
type Server struct {
	store    *Store
	proxy    *hostproxy.Proxy
	hub      Subscriber
	endpoint string
	path     string
	service  string
	limits   Limits
	log      *slog.Logger
	check    time.Duration
	ping     time.Duration
	rate     *peerLimiter

	kick      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu     sync.Mutex
	slots  map[string]*conn // by device id: online browsers and upgrades in progress
	closed bool
}

// New validates opts and starts the grant checker. Errors name the bad
// option.
func New(opts Options) (*Server, error) {
	if opts.Store == nil || opts.Proxy == nil || opts.Hub == nil {
		return nil, errors.New("remote: Options.Store, Proxy and Hub are required")
	}
	u, err := url.Parse(opts.Endpoint)
	if err != nil || (u.Scheme != "wss" && u.Scheme != "ws") || u.Host == "" || u.Fragment != "" || u.RawQuery != "" {
		return nil, fmt.Errorf("remote: endpoint %q must be a wss:// (or loopback ws://) URL without query or fragment", opts.Endpoint)
	}
	if u.Scheme == "ws" && !loopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("remote: endpoint %q: plain ws:// is for loopback development only; use wss://", opts.Endpoint)
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		store: opts.Store, proxy: opts.Proxy, hub: opts.Hub,
		endpoint: opts.Endpoint, path: cmpPath(u.Path), service: opts.ServiceName,
		limits: opts.Limits.withDefaults(), log: opts.Logger,
		check: opts.CheckInterval, ping: opts.PingInterval,
		kick: make(chan struct{}, 1), done: make(chan struct{}),
		slots: make(map[string]*conn),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("module", "remote")
	if s.check <= 0 {
		s.check = DefaultCheckInterval
	}
	if s.ping <= 0 {
		s.ping = DefaultPingInterval
	}
	s.rate = newPeerLimiter(s.limits.AuthorizeRate, s.limits.MaxPeerCounters, s.store.now)
	s.wg.Add(1)
	go s.checkGrants()
	return s, nil
}

func cmpPath(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// Path is the socket route's path (the endpoint's); the authorize route is
// Path + "/authorize".
func (s *Server) Path() string { return s.path }

// Endpoint is the public URL credentials are bound to.
func (s *Server) Endpoint() string { return s.endpoint }

// Limits returns the limits in force (defaults applied).
func (s *Server) Limits() Limits { return s.limits }

// Mount registers the two routes on mux: GET Path (the socket) and POST
// Path/authorize.
func (s *Server) Mount(mux *http.ServeMux) {
	mux.Handle(s.path, s.SocketHandler())
	mux.Handle(strings.TrimSuffix(s.path, "/")+"/authorize", s.AuthorizeHandler())
}

// Close ends every socket (status 1001; their in-flight commands fail with
// a transport error), stops the grant checker and waits for the socket
// goroutines; later upgrades are refused 503. It does not close the Store.
// Idempotent; returns nil.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	s.closed = true
	all := make([]*conn, 0, len(s.slots))
	for _, c := range s.slots {
		all = append(all, c)
	}
	s.mu.Unlock()
	for _, c := range all {
		c.end(endGoingAway, "server closed")
	}
	s.wg.Wait()
	return nil
}

// CreateLink makes a pairing link for actor with the server's pairing
// lifetime. The link's URL carries the secret: hand it to the user,
// never log it.
func (s *Server) CreateLink(ctx context.Context, actor string) (Link, error) {
	return s.store.CreateLink(ctx, s.endpoint, actor, s.limits.PairingTTL)
}

// Devices lists the unrevoked grants (never credentials).
func (s *Server) Devices(ctx context.Context) ([]Device, error) { return s.store.Devices(ctx) }

// Revoke revokes one device and closes its socket at once (a CLI in another
// process revokes through the Store; the server then notices at its next
// check, within CheckInterval).
func (s *Server) Revoke(ctx context.Context, deviceID string) error {
	if err := s.store.Revoke(ctx, deviceID); err != nil {
		return err
	}
	s.recheck()
	return nil
}

// RevokeAll revokes every device and unused link, closing every socket.
func (s *Server) RevokeAll(ctx context.Context) (devices, links int, err error) {
	devices, links, err = s.store.RevokeAll(ctx)
	if err == nil {
		s.recheck()
	}
	return devices, links, err
}

func (s *Server) recheck() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// checkGrants re-reads the grants of every open socket each CheckInterval
// (and at once after an in-process revocation) and closes the sockets whose
// grant is revoked or expired; a failed read closes them all.
func (s *Server) checkGrants() {
	defer s.wg.Done()
	t := time.NewTicker(s.check)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		case <-s.kick:
		}
		s.mu.Lock()
		open := make(map[string]*conn, len(s.slots))
		ids := make([]string, 0, len(s.slots))
		for id, c := range s.slots {
			open[id] = c
			ids = append(ids, id)
		}
		s.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), grantReadTimeout)
		valid, err := s.store.Valid(ctx, ids)
		cancel()
		if err != nil {
			s.log.Error("grant check failed; closing every remote socket", "sockets", len(ids), "error", err)
			for _, c := range open {
				c.end(endGrantCheck, "grant check failed")
			}
			continue
		}
		for id, c := range open {
			if !valid[id] {
				s.log.Info("remote device grant ended; closing its socket", "deviceId", id)
				c.end(endRevoked, "device grant revoked or expired")
			}
		}
	}
}

// refuse answers a refused request before any upgrade; it logs the route,
// status and reason, never a header value.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	s.log.Warn("remote request refused", "route", r.URL.Path, "peer", r.RemoteAddr, "status", status, "code", code)
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", busyRetryAfter)
	}
	w.Header().Set("Connection", "close")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// authorizeRequest is the body of POST PATH/authorize.
type authorizeRequest struct {
	Action    string `json:"action"`
	NextToken string `json:"next_token"`
	Label     string `json:"label"`
}

// authorizeResponse is its 200 answer.
type authorizeResponse struct {
	DeviceID    string `json:"device_id"`
	ExpiresAt   string `json:"expires_at"`
	RenewAfter  string `json:"renew_after"`
	ServiceName string `json:"service_name,omitempty"`
}

// AuthorizeHandler serves POST PATH/authorize:
// Authorization: Bearer SECRET_OR_TOKEN and a JSON body of at most 4096
// bytes {"action":"pair"|"renew","next_token","label"}. Answers:
//   - 200 {device_id, expires_at, renew_after, service_name?} (RFC 3339);
//   - 400 a malformed body or next_token, an unknown action, or any query
//     string (credentials never travel in a URL); 405 not POST; 413 a body
//     over 4096 bytes;
//   - 401 a missing, unknown, used, expired or revoked credential, or one
//     of another endpoint; 409 a renewal of an old token to a different
//     next_token;
//   - 429 + Retry-After over the peer's or the global rate;
//   - 503 + Retry-After when the store's write lock was not obtained
//     within 500 ms (the grant in force is untouched).
//
// Every answer closes its connection and sets no cookie.
func (s *Server) AuthorizeHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			s.refuse(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
			return
		}
		if r.URL.RawQuery != "" {
			s.refuse(w, r, http.StatusBadRequest, "query_not_allowed", "no query string is accepted; credentials go in the Authorization header")
			return
		}
		if ok, wait := s.rate.allow(r.RemoteAddr); !ok {
			w.Header().Set("Retry-After", retryAfter(wait))
			s.refuse(w, r, http.StatusTooManyRequests, "rate_limited", "too many authorization exchanges")
			return
		}
		cred, ok := bearer(r)
		if !ok {
			s.refuse(w, r, http.StatusUnauthorized, "unauthorized", "one Authorization: Bearer credential is required")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAuthorizeBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				s.refuse(w, r, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body exceeds %d bytes", maxAuthorizeBody))
				return
			}
			s.refuse(w, r, http.StatusBadRequest, "bad_body", "the body could not be read")
			return
		}
		var req authorizeRequest
		if err := json.Unmarshal(body, &req); err != nil {
			s.refuse(w, r, http.StatusBadRequest, "malformed_body", "the body is not a JSON object")
			return
		}
		var g Grant
		switch req.Action {
		case "pair":
			g, err = s.store.Pair(r.Context(), s.endpoint, cred, req.NextToken, cleanLabel(req.Label), s.limits.DeviceTTL, s.limits.RenewAfter)
		case "renew":
			g, err = s.store.Renew(r.Context(), s.endpoint, cred, req.NextToken, s.limits.DeviceTTL, s.limits.RenewAfter)
		default:
			s.refuse(w, r, http.StatusBadRequest, "bad_action", `action must be "pair" or "renew"`)
			return
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrUnauthorized):
			s.refuse(w, r, http.StatusUnauthorized, "unauthorized", err.Error())
			return
		case errors.Is(err, ErrRenewConflict):
			s.refuse(w, r, http.StatusConflict, "renew_conflict", err.Error())
			return
		case errors.Is(err, ErrBadToken):
			s.refuse(w, r, http.StatusBadRequest, "bad_next_token", err.Error())
			return
		case errors.Is(err, ErrBusy):
			s.refuse(w, r, http.StatusServiceUnavailable, "store_busy", err.Error())
			return
		default:
			s.log.Error("authorize failed", "action", req.Action, "error", err)
			s.refuse(w, r, http.StatusInternalServerError, "store_error", "the grant store failed")
			return
		}
		s.log.Info("remote device authorized", "action", req.Action, "deviceId", g.DeviceID, "peer", r.RemoteAddr)
		w.Header().Set("Connection", "close")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(authorizeResponse{
			DeviceID: g.DeviceID, ExpiresAt: g.ExpiresAt.Format(time.RFC3339), RenewAfter: g.RenewAfter.Format(time.RFC3339),
			ServiceName: s.service,
		})
	})
}

// bearer returns the one Bearer credential of r.
func bearer(r *http.Request) (string, bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return "", false
	}
	tok, ok := strings.CutPrefix(vals[0], "Bearer ")
	tok = strings.TrimSpace(tok)
	return tok, ok && tok != "" && !strings.ContainsAny(tok, " ,")
}

// cleanLabel keeps a label printable and at most 128 bytes.
func cleanLabel(l string) string {
	l = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(l))
	for len(l) > 128 {
		_, size := utf8.DecodeLastRuneInString(l)
		l = l[:len(l)-size]
	}
	return l
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	return loopbackPeer(h)
}
