package hostproxy

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/browserchain/browserchain/eventhub/wire"
)

// TestHandleClientFrame_TheRouteChecksForTransportsOfTheHostApp: a client
// socket's frames are refused as the POST routes refuse them, with their
// status and code.
func TestHandleClientFrame_TheRouteChecksForTransportsOfTheHostApp(t *testing.T) {
	h := newFakeHub()
	h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	defer p.Close()

	r, ok := p.ClientFrames().Handle("ext", "alice", TransportRemote, []byte(`{"type":"result"}`))
	assert.True(t, ok)
	assert.Equal(t, http.StatusBadRequest, r.Status)
	assert.Equal(t, "missing_request_id", r.Code)
	r, _ = p.ClientFrames().Handle("ext", "alice", TransportRemote, []byte(`{"type":"result","requestId":"r1","content":"{}"}`))
	assert.Equal(t, "unknown_request", r.Code)
	assert.Equal(t, http.StatusNotFound, r.Status)

	ev := []byte(`{"type":"host_browser_event","method":"Page.loadEventFired"}`)
	_, ok = p.ClientFrames().Handle("ext", "alice", TransportRemote, ev)
	assert.False(t, ok, "an accepted event is not answered")
	r, _ = p.ClientFrames().Handle("ext", "mallory", TransportRemote, ev)
	assert.Equal(t, "wrong_actor", r.Code)
	r, _ = p.ClientFrames().Handle("gone", "alice", TransportRemote, []byte(`{"type":"host_browser_session_invalidated","sessionId":"S1"}`))
	assert.Equal(t, "unknown_client", r.Code)
	assert.Contains(t, r.Error, "hostproxy: unknown_client")
}
