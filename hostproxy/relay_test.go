package hostproxy

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// fakeRelay hands results to another Proxy (the replica where the caller
// waits) and records relayed events.
type fakeRelay struct {
	mu     sync.Mutex
	owner  *Proxy
	events []browserbackend.Event
}

func (r *fakeRelay) RelayResult(_ context.Context, rr RelayedResult) (RelayVerdict, bool) {
	if r.owner == nil {
		return RelayVerdict{}, false
	}
	return r.owner.RelayInbox().AcceptResult(rr), true
}

func (r *fakeRelay) RelayEvent(_ string, ev browserbackend.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func TestRelay_ResultForAnotherProxyGetsItsVerdictAndEventsAreRelayed(t *testing.T) {
	h := newFakeHub()
	target := h.add("ext-1", wire.InterfaceChromeExtension, "alice", time.Now())
	owner := New(Options{Hub: h, Logger: quietLogger()})
	defer owner.Close()
	relay := &fakeRelay{owner: owner}
	other := New(Options{Hub: h, Logger: quietLogger(), Relay: relay})
	defer other.Close()

	msg, out := startRequest(t, context.Background(), owner, Req{Method: "Runtime.evaluate", TargetClientID: "ext-1"}, target)
	id := msg["requestId"].(string)
	// Refusals are decided by the owner, and the request stays pending.
	rec := postResult(other, "ext-1", "mallory", ResultBody{RequestID: id, Content: `{}`})
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Contains(t, rec.Body.String(), "wrong_actor")
	rec = postResult(other, "ext-1", "alice", ResultBody{RequestID: id, Content: `{"v":1}`})
	require.Equal(t, http.StatusOK, rec.Code)
	o := <-out
	require.NoError(t, o.err)
	require.JSONEq(t, `{"v":1}`, string(o.res))

	// Nobody claims it: 404 as without a relay.
	relay.owner = nil
	rec = postResult(other, "ext-1", "alice", ResultBody{RequestID: "nope", Content: `{}`})
	require.Equal(t, http.StatusNotFound, rec.Code)

	rec = post(other.eventHandler(), "ext-1", "alice", []byte(`{"method":"Page.loadEventFired","params":{}}`))
	require.Equal(t, http.StatusOK, rec.Code)
	relay.mu.Lock()
	require.Len(t, relay.events, 1)
	require.Equal(t, "Page.loadEventFired", relay.events[0].Method)
	relay.mu.Unlock()
}
