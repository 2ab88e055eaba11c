package remote

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/internal/logtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSetupLimit_OverTheBoundTheOldestIsClosedWithOneWarning: with a bound
// of one, a connection that has not sent its request holds the only setup
// slot until the next one comes: that one takes the slot, the holder is
// closed, counted and warned about once; after a request is read its
// connection is out of setup and closes nobody (REM-6).
func TestSetupLimit_OverTheBoundTheOldestIsClosedWithOneWarning(t *testing.T) {
	logs := &logtest.Buffer{}
	log := newJSONLogger(logs)
	limit := NewSetupLimit(1, log)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "ok")
	}), limit, nil, log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(limit.Listener(ln)) }()
	t.Cleanup(func() { srv.Close(); <-served })

	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second))) // against a hang only
		return c
	}
	get := func(c net.Conn) {
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	holder := dial()
	older := holder
	for range 2 {
		c := dial()
		_, err := older.Read(make([]byte, 1))
		require.Error(t, err, "closed for the newcomer")
		older = c
	}
	assert.Equal(t, uint64(2), limit.Dropped())
	assert.Equal(t, 1, strings.Count(logs.String(), "connection setup over its bound"))

	get(older)
	get(dial())
	assert.Equal(t, uint64(2), limit.Dropped(), "a connection whose request was read left setup")
}

// TestNewHTTPServer_BoundsHeaderSize: request headers beyond 16 KiB are
// refused (431) before any handler runs (REM-6).
func TestNewHTTPServer_BoundsHeaderSize(t *testing.T) {
	ran := false
	srv := NewHTTPServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }), nil, nil, newJSONLogger(&logtest.Buffer{}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		// Shutdown, not Close: it waits for net/http's lingering close of the
		// refused connection.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
	})
	req, err := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/", nil)
	require.NoError(t, err)
	req.Header.Set("X-Big", strings.Repeat("a", 2*DefaultMaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	assert.False(t, ran)
	assert.Equal(t, DefaultReadHeaderTimeout, srv.ReadHeaderTimeout)
}

// dialFrom opens a TCP connection to addr from the loopback address from
// (Linux routes all of 127/8 to the loopback interface), closed at the
// test's end.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSetupLimit_IdleConnectionsDoNotStarveAPairedDevice: connections that
// send half a request line and wait hold set-up slots; whether they all
// come from one address or fill every slot from several, a paired device
// connecting afterwards gets its socket (REM-6).
func TestSetupLimit_IdleConnectionsDoNotStarveAPairedDevice(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holders []string
		closed  uint64
	}{
		// The address's share of 4 is 1: each holder closes the one before.
		{"one address holds more than its share", []string{"127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.2"}, 3},
		// The device's connection closes the oldest holder.
		{"four addresses hold every slot", []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := NewSetupLimit(4, slog.New(slog.DiscardHandler))
			f := newFixture(t, fixtureOpts{setup: limit})
			token, _ := f.pair("u")
			addr := f.http.Listener.Addr().String()
			// Connected before the device dials, so the server accepts
			// them first (the listen queue is in order).
			for _, from := range tc.holders {
				c := dialFrom(t, from, addr)
				_, err := io.WriteString(c, "GET /exten")
				require.NoError(t, err)
			}
			d := f.dial(token)
			assert.NotEmpty(t, d.clientID)
			assert.Equal(t, tc.closed, limit.Dropped())
		})
	}
}

// rawUpgrade sends a WebSocket upgrade with token whose request line and
// headers, final blank line included, are exactly size bytes, and returns
// the answer's status.
func rawUpgrade(t *testing.T, addr, token string, size int) int {
	t.Helper()
	head := "GET /extension HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Protocol: " + wire.SubprotocolAuthPrefix + token + "\r\n" +
		"Origin: chrome-extension://abcdefghijklmnopabcdefghijklmnop\r\n"
	const padName, end = "X-Pad: ", "\r\n\r\n"
	pad := size - len(head) - len(padName) - len(end)
	require.Positive(t, pad)
	req := head + padName + strings.Repeat("a", pad) + end
	require.Len(t, req, size)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second))) // against a hang only
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestNewHTTPServer_UpgradeHeaderCapIsExactly16KiB: an upgrade whose
// request line and headers take DefaultMaxHeaderBytes bytes is accepted;
// one byte more, or the 17,719 bytes net/http used to let through, is
// refused with 431 (REM-6).
func TestNewHTTPServer_UpgradeHeaderCapIsExactly16KiB(t *testing.T) {
	f := newFixture(t, fixtureOpts{setup: NewSetupLimit(0, slog.New(slog.DiscardHandler))})
	token, _ := f.pair("u")
	addr := f.http.Listener.Addr().String()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, rawUpgrade(t, addr, token, 17719))
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, rawUpgrade(t, addr, token, DefaultMaxHeaderBytes+1))
	assert.Equal(t, http.StatusSwitchingProtocols, rawUpgrade(t, addr, token, DefaultMaxHeaderBytes))
}

// addrConn is a connection from a given peer address.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }
func (c addrConn) Close() error         { return nil }

// TestSetupLimit_TheAddressHoldingMostLosesItsOldest: over the global
// bound the slot is taken from the address holding the most, its oldest
// connection first; an address holding fewer (a device's) keeps its own,
// however old; IPv6 addresses of one /64 share one address's share (REM-6).
func TestSetupLimit_TheAddressHoldingMostLosesItsOldest(t *testing.T) {
	l := NewSetupLimit(8, slog.New(slog.DiscardHandler)) // 2 per address
	admit := func(addr string) *setupConn {
		ap := netip.MustParseAddrPort(addr)
		sc, evicted := l.admit(addrConn{remote: net.TCPAddrFromAddrPort(ap)})
		if evicted != nil {
			evicted.Close()
		}
		return sc
	}
	device := admit("192.0.2.1:1000")
	a1, a2 := admit("198.51.100.1:1"), admit("198.51.100.1:2")
	b1, b2 := admit("198.51.100.2:1"), admit("198.51.100.2:2")
	c1, c2 := admit("[2001:db8::1]:1"), admit("[2001:db8::ffff]:2")
	c3 := admit("[2001:db8::2]:3")
	assert.False(t, c1.inSetup, "one /64 is one address, over its share of 2")
	admit("203.0.113.9:1")
	require.Equal(t, 8, l.total)

	admit("203.0.113.10:1")
	assert.False(t, a1.inSetup, "the oldest of the heaviest")
	admit("203.0.113.11:1")
	assert.False(t, b1.inSetup)
	admit("203.0.113.12:1")
	assert.False(t, c2.inSetup)
	assert.True(t, device.inSetup && a2.inSetup && b2.inSetup && c3.inSetup)
	assert.Equal(t, 8, l.total)
	assert.Equal(t, uint64(0), l.Dropped(), "counted by the listener that closes them")
}
