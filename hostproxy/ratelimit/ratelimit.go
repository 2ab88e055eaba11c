// Package ratelimit is the HTTP rate-limiting middleware a host app mounts in
// front of the runtime's routes: a per-client-IP sliding window
// (github.com/go-chi/httprate) with three budgets — loopback, authenticated
// remote and unauthenticated — whose authenticated budget can change at run
// time. It is not part of the hub: the hub only carries events.
//
//	limiter := ratelimit.New(ratelimit.Config{Logger: logger})
//	mux.Handle("/v1/", auth(limiter.Handler(routes)))
package ratelimit

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/httprate"

	"github.com/browserchain/browserchain/eventhub"
)

// Default budgets of RateLimit, per client IP per minute.
const (
	DefaultLoopbackLimit        = 1200
	DefaultAuthenticatedLimit   = 300
	DefaultUnauthenticatedLimit = 20
)

// maxTrackedEndpoints bounds the per-IP endpoint breakdown kept for the 429
// log; further endpoints are counted under "other".
const maxTrackedEndpoints = 16

// Class is the budget a request is charged to.
type Class string

// The budget classes.
const (
	// ClassLoopback: authenticated, peer on 127.0.0.0/8 or ::1.
	ClassLoopback Class = "loopback"
	// ClassAuthenticated: authenticated, any other peer.
	ClassAuthenticated Class = "authenticated"
	// ClassUnauthenticated: no actor in the context, any peer.
	ClassUnauthenticated Class = "unauthenticated"
)

// Config configures RateLimit. The zero value uses the defaults.
type Config struct {
	// LoopbackLimit, AuthenticatedLimit and UnauthenticatedLimit are requests
	// per Window per client IP; ≤ 0 takes the default (1200, 300, 20).
	LoopbackLimit        int
	AuthenticatedLimit   int
	UnauthenticatedLimit int
	// Window is the sliding window length (default 1 minute).
	Window time.Duration
	// Exempt reports whether a request bypasses the limiter. nil uses
	// DefaultExempt.
	Exempt func(*http.Request) bool
	// Logger receives the 429 warning (nil = slog.Default()).
	Logger *slog.Logger
	// Authenticated reports whether a request is authenticated. nil means
	// "eventhub.ActorFrom(r.Context()) is present", which needs the auth middleware
	// to run first.
	Authenticated func(*http.Request) bool
}

// DefaultExempt exempts the events stream and the health probes:
// a path whose last segment is events, health, healthz or readyz.
// The stream is one long connection; 429-ing it or a probe makes clients
// reconnect harder.
func DefaultExempt(r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch p[strings.LastIndexByte(p, '/')+1:] {
	case "events", "health", "healthz", "readyz":
		return true
	}
	return false
}

// Limiter is the rate-limit middleware: a per-client-IP sliding window
// counter (github.com/go-chi/httprate) with three budgets. The key is the
// budget class plus the peer IP from r.RemoteAddr — forwarding headers are
// never trusted (a host app behind a trusted proxy rewrites RemoteAddr
// itself before this middleware). IPv6 peers share a budget per /64, and
// all loopback peers (127.0.0.0/8, ::1) share one.
//
// Order: mount it AFTER the auth middleware (it reads ActorFrom to pick the
// budget) and before the routes:
//
//	mux.Handle("/v1/", auth(limiter.Handler(routes)))
//
// For the unauthenticated budget to bite, that auth middleware must annotate
// rather than reject: it sets the actor for a valid credential and passes
// every request on, and the routes refuse requests without an actor (as
// EventsHandler's host app and hostproxy's routes do). An auth middleware
// that answers 401 itself would let bad credentials bypass the limiter; in
// that case mount the limiter first and set Config.Authenticated.
//
// Safe for concurrent use; SetAuthenticatedLimit may be called at any time.
type Limiter struct {
	loopback, unauth int
	authenticated    atomic.Int64
	window           time.Duration
	exempt           func(*http.Request) bool
	isAuthenticated  func(*http.Request) bool
	logger           *slog.Logger
	limiter          *httprate.RateLimiter

	mu        sync.Mutex
	usage     map[string]*endpointUsage
	usageFrom time.Time
}

type endpointUsage struct {
	counts map[string]int
}

// New returns a limiter with cfg applied.
func New(cfg Config) *Limiter {
	l := &Limiter{
		loopback: cfg.LoopbackLimit,
		unauth:   cfg.UnauthenticatedLimit,
		window:   cfg.Window,
		exempt:   cfg.Exempt,
		logger:   cfg.Logger,

		isAuthenticated: cfg.Authenticated,
		usage:           make(map[string]*endpointUsage),
	}
	if l.loopback <= 0 {
		l.loopback = DefaultLoopbackLimit
	}
	if l.unauth <= 0 {
		l.unauth = DefaultUnauthenticatedLimit
	}
	if l.window <= 0 {
		l.window = time.Minute
	}
	if l.exempt == nil {
		l.exempt = DefaultExempt
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	if l.isAuthenticated == nil {
		l.isAuthenticated = func(r *http.Request) bool { _, ok := eventhub.ActorFrom(r.Context()); return ok }
	}
	l.SetAuthenticatedLimit(cfg.AuthenticatedLimit)
	// The per-request limit overrides this one through the context.
	l.limiter = httprate.NewRateLimiter(l.loopback, l.window)
	l.usageFrom = time.Now()
	return l
}

// SetAuthenticatedLimit changes the authenticated-remote budget at run time
// (≤ 0 restores the default 300). It applies from the next request.
func (l *Limiter) SetAuthenticatedLimit(n int) {
	if n <= 0 {
		n = DefaultAuthenticatedLimit
	}
	l.authenticated.Store(int64(n))
}

// AuthenticatedLimit returns the current authenticated-remote budget.
func (l *Limiter) AuthenticatedLimit() int { return int(l.authenticated.Load()) }

// Classify returns the budget class and the limit that applies to r.
func (l *Limiter) Classify(r *http.Request) (Class, int) {
	if !l.isAuthenticated(r) {
		return ClassUnauthenticated, l.unauth
	}
	if peerIsLoopback(r.RemoteAddr) {
		return ClassLoopback, l.loopback
	}
	return ClassAuthenticated, l.AuthenticatedLimit()
}

// peerIP returns the IP part of a RemoteAddr ("host:port" or a bare host).
func peerIP(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}

func peerIsLoopback(remote string) bool {
	a, err := netip.ParseAddr(peerIP(remote))
	return err == nil && a.Unmap().IsLoopback()
}

// Handler wraps next with the limiter. A request over budget gets 429 with
// Retry-After and X-RateLimit-* headers, and a warn log (module
// rate-limiter) naming the denied endpoint, the class, the limit and the
// per-endpoint breakdown of what this IP consumed in the current window.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if l.exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		class, limit := l.Classify(r)
		ip := httprate.CanonicalizeIP(peerIP(r.RemoteAddr))
		if peerIsLoopback(r.RemoteAddr) {
			// Every loopback address is this machine: one budget, or a
			// local process gets a fresh one per source address.
			ip = "loopback"
		}
		key := string(class) + "|" + ip
		r2 := r.WithContext(httprate.WithRequestLimit(r.Context(), limit))
		if l.limiter.OnLimit(w, r2, key) {
			l.logger.Warn("rate limit exceeded",
				"module", "rate-limiter",
				"endpoint", r.Method+" "+r.URL.Path,
				"class", string(class),
				"clientIp", peerIP(r.RemoteAddr),
				"limit", limit,
				"window", l.window,
				slog.Any("consumedBy", l.breakdown(key)))
			http.Error(w, "ratelimit: rate limit exceeded", http.StatusTooManyRequests)
			return
		}
		l.record(key, r.Method+" "+r.URL.Path)
		next.ServeHTTP(w, r)
	})
}

// record counts an admitted request under its endpoint, for the 429 log.
// The breakdown resets every window so it stays bounded.
func (l *Limiter) record(key, endpoint string) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.usageFrom) >= l.window {
		clear(l.usage)
		l.usageFrom = now
	}
	u := l.usage[key]
	if u == nil {
		u = &endpointUsage{counts: make(map[string]int)}
		l.usage[key] = u
	}
	if _, ok := u.counts[endpoint]; !ok && len(u.counts) >= maxTrackedEndpoints {
		endpoint = "other"
	}
	u.counts[endpoint]++
}

// EndpointCount is one line of the 429 breakdown.
type EndpointCount struct {
	Endpoint string `json:"endpoint"`
	Count    int    `json:"count"`
}

func (l *Limiter) breakdown(key string) []EndpointCount {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.usage[key]
	if u == nil {
		return nil
	}
	out := make([]EndpointCount, 0, len(u.counts))
	for e, n := range u.counts {
		out = append(out, EndpointCount{e, n})
	}
	slices.SortFunc(out, func(a, b EndpointCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Endpoint, b.Endpoint)
	})
	return out
}
