package remote

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxSetup bounds the connections in setup at once.
const DefaultMaxSetup = 64

// Timeouts and sizes of the server NewHTTPServer returns: bounded header
// time and size.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultMaxHeaderBytes    = 16 << 10
	// DefaultIdleTimeout is short: exchanges close their connections, so
	// only a client that never sends a request is idle.
	DefaultIdleTimeout = 30 * time.Second
)

// setupWarnInterval is the least time between two warnings about dropped
// setups.
const setupWarnInterval = 10 * time.Second

// SetupLimit bounds the connections in setup (accepted, TLS handshake and
// request headers not yet done) to a maximum: a connection accepted
// over it is closed at once, counted, and reported by a warning at most
// once every 10 s. Install both halves: Listener around the listener and
// ConnState as the http.Server's ConnState (NewHTTPServer does). Safe for
// concurrent use.
type SetupLimit struct {
	max     int64
	log     *slog.Logger
	inSetup atomic.Int64
	dropped atomic.Uint64
	warn    rate.Sometimes
}

// NewSetupLimit returns a limit of max connections in setup (≤ 0 means
// DefaultMaxSetup); log nil means slog.Default().
func NewSetupLimit(max int, log *slog.Logger) *SetupLimit {
	if max <= 0 {
		max = DefaultMaxSetup
	}
	if log == nil {
		log = slog.Default()
	}
	return &SetupLimit{max: int64(max), log: log.With("module", "remote"), warn: rate.Sometimes{Interval: setupWarnInterval}}
}

// Dropped is how many connections were closed over the limit.
func (l *SetupLimit) Dropped() uint64 { return l.dropped.Load() }

// Listener wraps ln: each accepted connection counts as in setup until its
// first request is read or it closes.
func (l *SetupLimit) Listener(ln net.Listener) net.Listener {
	return &setupListener{Listener: ln, l: l}
}

type setupListener struct {
	net.Listener
	l *SetupLimit
}

func (sl *setupListener) Accept() (net.Conn, error) {
	for {
		c, err := sl.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if sl.l.inSetup.Add(1) > sl.l.max {
			sl.l.inSetup.Add(-1)
			// Count and warn before the close, so a peer that sees its
			// connection closed also sees it counted.
			n := sl.l.dropped.Add(1)
			sl.l.warn.Do(func() {
				sl.l.log.Warn("connection setup over its bound; new connections dropped", "maxSetup", sl.l.max, "droppedTotal", n)
			})
			c.Close()
			continue
		}
		return &setupConn{Conn: c, l: sl.l}, nil
	}
}

type setupConn struct {
	net.Conn
	l    *SetupLimit
	once sync.Once
}

func (c *setupConn) done() { c.once.Do(func() { c.l.inSetup.Add(-1) }) }

func (c *setupConn) Close() error {
	c.done()
	return c.Conn.Close()
}

// ConnState ends a connection's setup at its first request (or its close).
func (l *SetupLimit) ConnState(c net.Conn, st http.ConnState) {
	if st == http.StateNew {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if sc, ok := c.(*setupConn); ok {
		sc.done()
	}
}

// NewHTTPServer returns the http.Server for the remote listener: handler,
// the setup limit (nil: none), tlsConfig (nil: plain; loopback only, behind
// a TLS reverse proxy), bounded header time and size, and a short idle
// timeout. Serve it with srv.Serve(limit.Listener(ln)), or ServeTLS.
func NewHTTPServer(handler http.Handler, limit *SetupLimit, tlsConfig *tls.Config, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.Default()
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		IdleTimeout:       DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.With("module", "remote").Handler(), slog.LevelWarn),
	}
	if limit != nil {
		srv.ConnState = limit.ConnState
	}
	return srv
}
