package hostproxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// AwaitsResult passes exactly the result posts of a client a request of
// the proxy waits on: not another client's, not another route's or method,
// and not once the answer has been delivered.
func TestAwaitsResult_OnlyTheResultPostOfAClientWithARequestPending(t *testing.T) {
	h := newFakeHub()
	mac := h.add("mac", wire.InterfaceMacOS, "alice", t0)
	h.add("mac-2", wire.InterfaceMacOS, "alice", t0)
	p := newTestProxy(h)
	post := func(method, path, client string) *http.Request {
		r := httptest.NewRequest(method, path, nil)
		r.Header.Set(wire.HeaderClientID, client)
		return r
	}
	assert.False(t, p.AwaitsResult(post(http.MethodPost, wire.PathHostBrowserResult, "mac")), "nothing pending yet")

	msg, done := startRequest(t, context.Background(), p, Req{Method: "Runtime.evaluate", TargetClientID: "mac", SourceActor: "alice"}, mac)
	assert.True(t, p.AwaitsResult(post(http.MethodPost, wire.PathHostBrowserResult, "mac")))
	assert.False(t, p.AwaitsResult(post(http.MethodPost, wire.PathHostBrowserResult, "mac-2")), "another client")
	assert.False(t, p.AwaitsResult(post(http.MethodPost, wire.PathPing, "mac")), "another route")
	assert.False(t, p.AwaitsResult(post(http.MethodGet, wire.PathHostBrowserResult, "mac")), "not a post")
	assert.False(t, p.AwaitsResult(post(http.MethodPost, wire.PathHostBrowserResult, "")), "no client named")

	rec := postResult(p, "mac", "alice", ResultBody{RequestID: msg["requestId"].(string), Content: `{}`})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, (<-done).err)
	assert.False(t, p.AwaitsResult(post(http.MethodPost, wire.PathHostBrowserResult, "mac")), "answered: nothing pending")

	// Counted per request: one answered leaves the other awaited; one
	// that ends unanswered (its caller gave up) is no longer awaited.
	ctx, cancel := context.WithCancel(context.Background())
	first, firstDone := startRequest(t, context.Background(), p, Req{Method: "Runtime.evaluate", TargetClientID: "mac", SourceActor: "alice"}, mac)
	_, secondDone := startRequest(t, ctx, p, Req{Method: "Runtime.evaluate", TargetClientID: "mac", SourceActor: "alice"}, mac)
	rec = postResult(p, "mac", "alice", ResultBody{RequestID: first["requestId"].(string), Content: `{}`})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, (<-firstDone).err)
	assert.True(t, p.AwaitsResult(post(http.MethodPost, wire.PathHostBrowserResult, "mac")), "the second is still awaited")
	cancel()
	require.Error(t, (<-secondDone).err)
	assert.False(t, p.AwaitsResult(post(http.MethodPost, wire.PathHostBrowserResult, "mac")), "given up: nothing awaited")
}
