package runtime_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/ratelimit"
)

// postResult posts a result body as client with token and returns the
// status; the response is drained and closed at once, so a long run of
// posts reuses one connection.
func postResult(t *testing.T, srv *httptest.Server, token, client string, body hostproxy.ResultBody) int {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.URL+wire.PathHostBrowserResult, strings.NewReader(string(raw)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(wire.HeaderClientID, client)
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// The soak's host-bridge timeouts (issue 10): a busy desktop bridge on
// loopback used up the HUB-6 budget of 1200 posts a minute with result
// posts, the server answered the next result 429, the bridge dropped it,
// and the command — which the browser had answered — ended at its deadline
// as timeout ("1 in flight, last answer 15 s ago"). A result that answers a
// request the server waits for is not counted against the budget; stray
// result posts (nothing pending for the client) still are.
func TestRuntime_ResultOfAPendingRequestPassesAnExhaustedRateLimit(t *testing.T) {
	rt, srv := newServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a broken test only
	defer cancel()
	const client = "mac-1"
	tok, err := rt.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceMacOS, ClientID: client})
	require.NoError(t, err)
	sub, err := rt.Hub.Subscribe(eventhub.SubscribeRequest{ClientID: client, InterfaceID: wire.InterfaceMacOS,
		Actor: rt.Auth.ActorPrincipalID()})
	require.NoError(t, err)
	defer sub.Close()

	// Stray results (no request pending) use up the loopback budget until
	// the limiter refuses one.
	refused := false
	for i := range 2 * ratelimit.DefaultLoopbackLimit {
		status := postResult(t, srv, tok.Token, client, hostproxy.ResultBody{RequestID: "stray-" + strconv.Itoa(i), Content: "{}"})
		if status == http.StatusTooManyRequests {
			refused = true
			break
		}
		require.Equal(t, http.StatusNotFound, status, "a stray result names no pending request")
	}
	require.True(t, refused, "stray result posts are rate-limited")

	// A request to the client: its answer goes through although the
	// budget is spent, and the caller gets the result, not a timeout.
	type answer struct {
		res json.RawMessage
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := rt.Proxy.Request(ctx, hostproxy.Req{Method: "Runtime.evaluate", TargetClientID: client, Timeout: time.Minute})
		done <- answer{res, err}
	}()
	env, err := sub.Next(ctx)
	require.NoError(t, err)
	var msg hostproxy.RequestMessage
	require.NoError(t, json.Unmarshal(env.Message, &msg))
	require.Equal(t, wire.TypeHostBrowserRequest, msg.Type)
	require.Equal(t, http.StatusOK,
		postResult(t, srv, tok.Token, client, hostproxy.ResultBody{RequestID: msg.RequestID, Content: `{"result":{"value":2}}`}),
		"the answer to a pending request is not refused by the spent budget")
	select {
	case a := <-done:
		require.NoError(t, a.err)
		assert.JSONEq(t, `{"result":{"value":2}}`, string(a.res))
	case <-ctx.Done():
		t.Fatal("the request never got its answer")
	}

	// Once nothing is pending, result posts are counted again.
	assert.Equal(t, http.StatusTooManyRequests,
		postResult(t, srv, tok.Token, client, hostproxy.ResultBody{RequestID: msg.RequestID, Content: "{}"}),
		"a late second answer is a stray post")
}

// status sends a body-less POST to path with hdr and returns the status,
// the response drained and closed.
func status(t *testing.T, srv *httptest.Server, path string, hdr map[string]string) int {
	t.Helper()
	resp := do(t, srv, http.MethodPost, path, hdr, "")
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// All loopback peers share one unauthenticated budget (HUB-6: 20 a
// minute). A web page the user visits can send requests to the loopback
// server, and they used to be counted before they were refused, so a page
// could lock the paired extension's result socket out for a minute. Now a
// web page's request is refused before it is counted, the socket's
// handshakes have a budget of their own, and a flood without a token is
// counted however it names its client.
func TestRuntime_RefusedRequestsCannotSpendTheBudgetPairedClientsNeed(t *testing.T) {
	rt, srv := newServer(t, nil)
	tok, err := rt.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceChromeExtension})
	require.NoError(t, err)
	socketOpens := func() bool {
		t.Helper()
		c, resp, err := dialResultSocket(t, srv, origin)
		if err != nil {
			require.NotNil(t, resp, "%v", err)
			assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			return false
		}
		wsSend(t, c, map[string]string{"type": "auth", "token": tok.Token, "clientId": "ext-1"})
		m, err := wsRecv(c)
		require.NoError(t, err)
		require.Equal(t, "ready", m["type"])
		return true
	}

	// A web page: refused as such every time, never 429, whatever the count.
	for range 2 * ratelimit.DefaultUnauthenticatedLimit {
		require.Equal(t, http.StatusForbidden, status(t, srv, wire.PathPing, map[string]string{"Origin": "https://evil.example"}))
		require.Equal(t, http.StatusForbidden, status(t, srv, wire.PathPing, map[string]string{"Sec-Fetch-Site": "cross-site"}))
	}
	require.True(t, socketOpens(), "the page spent nothing the socket needs")

	// A local caller without a token (naming a client does not help) uses
	// up the unauthenticated budget of the HTTP routes ...
	limited := false
	for range 2 * ratelimit.DefaultUnauthenticatedLimit {
		st := status(t, srv, wire.PathHostBrowserEvent, map[string]string{wire.HeaderClientID: "ext-1"})
		if st == http.StatusTooManyRequests {
			limited = true
			break
		}
		require.Equal(t, http.StatusUnauthorized, st)
	}
	require.True(t, limited, "token-less event posts are counted")
	// ... not the socket's.
	require.True(t, socketOpens(), "the socket's handshakes have a budget of their own")
}
