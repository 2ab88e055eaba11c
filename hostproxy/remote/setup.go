package remote

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
	// DefaultMaxHeaderBytes bounds an HTTP/1.1 request's line and headers,
	// the blank line after them included: a request one byte over is
	// refused with 431 before any handler runs.
	DefaultMaxHeaderBytes = 16 << 10
	// DefaultIdleTimeout is short: exchanges close their connections, so
	// only a client that never sends a request is idle.
	DefaultIdleTimeout = 30 * time.Second
)

// setupWarnInterval is the least time between two warnings about dropped
// setups.
const setupWarnInterval = 10 * time.Second

// SetupLimit bounds the connections in setup (accepted, TLS handshake and
// request headers not yet done): max at once, a quarter of max (at least
// 1) from one peer address, an IPv6 /64 counting as one. Over a bound it
// closes the oldest connection in setup of the newcomer's address (over
// its share) or of the address holding the most (over max), never the
// newcomer: connections idling in setup cannot keep a paired device out.
// (No share can be reserved by credential: it arrives with the headers,
// as the connection leaves setup.) Closed connections are counted
// (Dropped) and warned about at most once every 10 s. Behind a reverse
// proxy every connection has the proxy's address. Install both halves:
// Listener around the listener and ConnState as the http.Server's
// ConnState (NewHTTPServer does). Safe for concurrent use.
type SetupLimit struct {
	max, perPeer int
	log          *slog.Logger
	dropped      atomic.Uint64
	warn         rate.Sometimes

	mu    sync.Mutex
	seq   uint64
	total int
	peers map[netip.Addr][]*setupConn // each address's connections in setup, oldest first
}

// NewSetupLimit returns a limit of n connections in setup (≤ 0 means
// DefaultMaxSetup), n/4 (at least 1) of them from one address; log nil
// means slog.Default().
func NewSetupLimit(n int, log *slog.Logger) *SetupLimit {
	if n <= 0 {
		n = DefaultMaxSetup
	}
	if log == nil {
		log = slog.Default()
	}
	return &SetupLimit{
		max: n, perPeer: max(1, n/4), log: log.With("module", "remote"),
		warn:  rate.Sometimes{Interval: setupWarnInterval},
		peers: make(map[netip.Addr][]*setupConn),
	}
}

// Dropped is how many connections were closed over a bound.
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
	c, err := sl.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc, evicted := sl.l.admit(c)
	if evicted != nil {
		// Count and warn before the close, so a peer that sees its
		// connection closed also sees it counted.
		n := sl.l.dropped.Add(1)
		sl.l.warn.Do(func() {
			sl.l.log.Warn("connection setup over its bound; the oldest connection in setup closed",
				"maxSetup", sl.l.max, "maxSetupPerPeer", sl.l.perPeer, "droppedTotal", n)
		})
		evicted.Conn.Close()
	}
	return sc, nil
}

// admit counts c as in setup and returns the connection whose slot it
// takes over a bound, already uncounted, or nil.
func (l *SetupLimit) admit(c net.Conn) (sc, evicted *setupConn) {
	peer := peerAddr(c.RemoteAddr().String())
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case len(l.peers[peer]) >= l.perPeer:
		evicted = l.peers[peer][0]
	case l.total >= l.max:
		evicted = l.heaviestOldest()
	}
	if evicted != nil {
		l.remove(evicted)
	}
	l.seq++
	sc = &setupConn{Conn: c, l: l, peer: peer, seq: l.seq, inSetup: true}
	l.peers[peer] = append(l.peers[peer], sc)
	l.total++
	return sc, evicted
}

// heaviestOldest is the oldest connection in setup of the address holding
// the most; l.mu held, l.total > 0.
func (l *SetupLimit) heaviestOldest() *setupConn {
	var pick *setupConn
	most := 0
	for _, cs := range l.peers {
		if len(cs) > most || len(cs) == most && cs[0].seq < pick.seq {
			pick, most = cs[0], len(cs)
		}
	}
	return pick
}

// remove ends c's setup; l.mu held.
func (l *SetupLimit) remove(c *setupConn) {
	if !c.inSetup {
		return
	}
	c.inSetup = false
	l.total--
	cs := l.peers[c.peer]
	for i, x := range cs {
		if x == c {
			cs = append(cs[:i:i], cs[i+1:]...)
			break
		}
	}
	if len(cs) == 0 {
		delete(l.peers, c.peer)
	} else {
		l.peers[c.peer] = cs
	}
}

type setupConn struct {
	net.Conn
	l    *SetupLimit
	peer netip.Addr
	seq  uint64
	// inSetup is guarded by l.mu.
	inSetup bool
}

func (c *setupConn) done() {
	c.l.mu.Lock()
	c.l.remove(c)
	c.l.mu.Unlock()
}

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

// httpHeaderSlack is what net/http reads past http.Server.MaxHeaderBytes
// before it refuses a request's headers.
const httpHeaderSlack = 4096

// NewHTTPServer returns the http.Server for the remote listener: handler,
// the setup limit (nil: none), tlsConfig (nil: plain; loopback only, behind
// a TLS reverse proxy), headers bounded to DefaultReadHeaderTimeout and
// DefaultMaxHeaderBytes (its MaxHeaderBytes is 4 KiB less, as net/http
// reads 4 KiB past it), and a short idle timeout. Serve it with
// srv.Serve(limit.Listener(ln)), or ServeTLS.
func NewHTTPServer(handler http.Handler, limit *SetupLimit, tlsConfig *tls.Config, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.Default()
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes - httpHeaderSlack,
		IdleTimeout:       DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.With("module", "remote").Handler(), slog.LevelWarn),
	}
	if limit != nil {
		srv.ConnState = limit.ConnState
	}
	return srv
}
