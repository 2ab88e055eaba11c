package hostproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
)

// A result posted to a Proxy that has no caller waiting for that request
// (here: a second Proxy sharing the hub, or a post racing the request's
// own registration) must be refused and leave the request pending. Before
// the fix it was answered 200, resolved the shared entry, reached nobody, and
// the real caller then blocked forever past its deadline.
func TestResultRoute_PostToAProxyWithoutTheCallerIsRefusedAndLosesNothing(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	owner := New(Options{Hub: h, Logger: quietLogger()})
	other := New(Options{Hub: h, Logger: quietLogger()})

	msg, done := startRequest(t, context.Background(), owner, Req{Method: "Page.navigate", TargetClientID: "ext"}, ext)
	id := msg["requestId"].(string)
	ok := ResultBody{RequestID: id, Content: `{"frameId":"F"}`}

	rec := postResult(other, "ext", "alice", ok)
	assert.Equal(t, http.StatusNotFound, rec.Code, rec.Body.String())
	_, pending := owner.Interactions().Lookup(id)
	require.True(t, pending, "a refused post must not consume the request")

	rec = postResult(owner, "ext", "alice", ok)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	guard := time.NewTimer(20 * time.Second) // only against a hang
	defer guard.Stop()
	select {
	case out := <-done:
		require.NoError(t, out.err)
		assert.JSONEq(t, `{"frameId":"F"}`, string(out.res))
	case <-guard.C:
		t.Fatal("the request never returned")
	}
}

// A pending entry resolved by the host app (Interactions.Resolve, for
// example when it drops a conversation) must not make the caller wait
// forever once its context ends: it gets the aborted error.
func TestRequest_EntryResolvedOutsideTheProxyStillEndsWithTheCallerContext(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	ctx, cancel := context.WithCancel(context.Background())
	msg, done := startRequest(t, ctx, p, Req{Method: "Page.navigate", TargetClientID: "ext"}, ext)
	_, ok := p.Interactions().Resolve(msg["requestId"].(string))
	require.True(t, ok)
	cancel()
	guard := time.NewTimer(20 * time.Second) // only against a hang
	defer guard.Stop()
	select {
	case out := <-done:
		var e *browserbackend.Error
		require.ErrorAs(t, out.err, &e)
		assert.Equal(t, browserbackend.ClassAborted, e.Class)
	case <-guard.C:
		t.Fatal("the request never returned after its context ended")
	}
}

// cdpParams is a JSON object on the wire (PXY-1); the desktop bridge drops a
// frame whose params are anything else, so such a request would sit unanswered
// until its timeout. It is refused before anything is sent, as a policy error
// (a caller bug: no failover).
func TestRequest_ParamsThatAreNotAJSONObjectAreRefusedBeforeSending(t *testing.T) {
	h := newFakeHub()
	ext := h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	for _, params := range []string{`[1,2]`, `"x"`, `7`, `true`, `{"a":`, `{"a":1} {}`} {
		_, err := p.Request(context.Background(), Req{Method: "Runtime.evaluate", Params: json.RawMessage(params),
			TargetClientID: "ext", Timeout: time.Minute})
		var e *browserbackend.Error
		require.ErrorAs(t, err, &e, params)
		assert.Equal(t, browserbackend.ClassPolicy, e.Class, params)
		assert.Equal(t, "invalid_params", e.Code, params)
		assert.False(t, e.Dispatched, params)
	}
	ext.empty(t)
	assert.Empty(t, p.Interactions().List(nil))
	for _, params := range []string{``, `null`, ` {} `, `{"expression":"1"}`} {
		msg, done := startRequest(t, context.Background(), p, Req{Method: "Runtime.evaluate", Params: json.RawMessage(params),
			TargetClientID: "ext"}, ext)
		rec := postResult(p, "ext", "alice", ResultBody{RequestID: msg["requestId"].(string), Content: "{}"})
		require.Equal(t, http.StatusOK, rec.Code, params)
		require.NoError(t, (<-done).err, params)
	}
}

// An error whose code is null or an empty string carries no structured code:
// it is a malformed answer (transport, invalid_response, failover-eligible),
// not a protocol error with an empty code that stops failover.
func TestClassifyResult_NullOrEmptyCodeIsInvalidResponse(t *testing.T) {
	for _, content := range []string{`{"code":null,"message":"m"}`, `{"code":"","message":"m"}`, `{"message":"m"}`} {
		_, err := ClassifyResult("Page.navigate", browserbackend.KindExtension, content, true)
		var e *browserbackend.Error
		require.ErrorAs(t, err, &e, content)
		assert.Equal(t, browserbackend.ClassTransport, e.Class, content)
		assert.Equal(t, browserbackend.CodeInvalidResponse, e.Code, content)
	}
}
