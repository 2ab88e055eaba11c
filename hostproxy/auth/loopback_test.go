package auth_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientFrom returns a client whose connections leave from the loopback
// address ip (every 127.0.0.0/8 address is this machine on Linux).
func clientFrom(t *testing.T, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// All loopback addresses are one peer, this machine: a local process must
// not get a fresh pairing budget by connecting from 127.0.0.2, 127.0.0.3, …
func TestPairRateLimitIsSharedByEveryLoopbackSourceAddress(t *testing.T) {
	f := newFixture(t, nil)
	status := func(ip string) int {
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/pair", strings.NewReader("{}"))
		require.NoError(t, err)
		for k, v := range extHeaders() {
			req.Header.Set(k, v)
		}
		resp, err := clientFrom(t, ip).Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 10 {
		assert.Equal(t, http.StatusOK, status(fmt.Sprintf("127.0.0.%d", i+1)), "request %d", i+1)
	}
	for _, ip := range []string{"127.0.0.1", "127.0.0.99", "127.1.2.3"} {
		assert.Equal(t, http.StatusTooManyRequests, status(ip), "from %s", ip)
	}
}
