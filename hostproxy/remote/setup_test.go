package remote

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/browserchain/browserchain/internal/logtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSetupLimit_OverflowDroppedWithOneWarning: with a bound of one, a
// connection that has not sent its request holds the only setup slot; the
// next ones are closed at once and warned about once; after the first
// request the slot is free again (REM-6).
func TestSetupLimit_OverflowDroppedWithOneWarning(t *testing.T) {
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
	holder := dial() // accepted first: in setup until it sends a request
	for range 2 {
		c := dial()
		_, err := c.Read(make([]byte, 1))
		require.Error(t, err, "dropped")
	}
	assert.Equal(t, uint64(2), limit.Dropped())
	assert.Equal(t, 1, strings.Count(logs.String(), "connection setup over its bound"))

	_, err = io.WriteString(holder, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(holder), nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	next := dial()
	_, err = io.WriteString(next, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err = http.ReadResponse(bufio.NewReader(next), nil)
	require.NoError(t, err, "the slot was freed by the first request")
	resp.Body.Close()
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
