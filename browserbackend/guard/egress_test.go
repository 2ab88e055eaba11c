package guard_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/guard"
)

// rebinder answers rebind.test with a public address the first time and
// with loopback afterwards (DNS rebinding); ok.test is always loopback.
type rebinder struct {
	mu    sync.Mutex
	calls int
}

func (r *rebinder) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch host {
	case "ok.test":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	case "rebind.test":
		r.calls++
		if r.calls == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

func TestEgressProxyRefusesARebindingName(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "hello")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	res := &rebinder{}
	g := guard.MustNew(guard.Policy{Resolver: res, DevLoopback: []string{fmt.Sprintf("ok.test:%d", port)}, Logger: quiet()})
	p, err := guard.NewEgressProxy(g, guard.EgressOptions{})
	require.NoError(t, err)
	defer p.Close()
	assert.Contains(t, p.ChromiumArgs()[0], p.Addr())

	target := fmt.Sprintf("http://rebind.test:%d/", port)
	require.NoError(t, g.CheckURL(t.Context(), target), "at check time the name is public")

	proxyURL, _ := url.Parse("http://" + p.Addr())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Get(target)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "plain http: refused at connect time")

	// CONNECT (how https travels) is refused the same way.
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT rebind.test:%d HTTP/1.1\r\nHost: rebind.test:%d\r\n\r\n", port, port)
	cr, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	cr.Body.Close()
	assert.Equal(t, http.StatusForbidden, cr.StatusCode)

	for _, h := range []string{"127.0.0.1", "0x7f.1", "2130706433", "[::1]", "169.254.169.254", "metadata.google.internal"} {
		resp, err := client.Get(fmt.Sprintf("http://%s:%d/", h, port))
		if err == nil {
			resp.Body.Close()
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, h)
		}
	}
	assert.Zero(t, hits.Load(), "the loopback server received nothing")

	// The guard remembers each refusal by host:port, for the tools.
	for _, u := range []string{target, fmt.Sprintf("HTTP://Rebind.Test.:%d/other?q=1", port), fmt.Sprintf("http://127.0.0.1:%d/x", port)} {
		err := g.EgressRefusal(u)
		require.ErrorIs(t, err, guard.ErrForbidden, u)
		var ge *guard.Error
		require.ErrorAs(t, err, &ge)
		assert.Equal(t, u, ge.URL, "the refusal names the URL asked about")
		assert.Equal(t, "url", ge.Param)
		assert.Equal(t, guard.RulePrivateNetwork+": 127.0.0.0/8", ge.Rule)
	}
	assert.NoError(t, g.EgressRefusal(fmt.Sprintf("http://ok.test:%d/", port)), "never refused")
	assert.NoError(t, g.EgressRefusal("http://rebind.test/"), "another port")
	assert.NoError(t, g.EgressRefusal("https://rebind.test/"), "another port")
	assert.NoError(t, g.EgressRefusal("about:blank"))

	// The dev opt-in passes, through a tunnel as well as plain.
	resp, err = client.Get(fmt.Sprintf("http://ok.test:%d/", port))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "hello", string(body))
	c2, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c2.Close()
	fmt.Fprintf(c2, "CONNECT ok.test:%d HTTP/1.1\r\nHost: ok.test:%d\r\n\r\n", port, port)
	br := bufio.NewReader(c2)
	cr, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, cr.StatusCode)
	fmt.Fprintf(c2, "GET / HTTP/1.1\r\nHost: ok.test\r\nConnection: close\r\n\r\n")
	tr2, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, _ = io.ReadAll(tr2.Body)
	tr2.Body.Close()
	assert.Equal(t, "hello", string(body))
	assert.Equal(t, int64(2), hits.Load())
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "idempotent")
}
