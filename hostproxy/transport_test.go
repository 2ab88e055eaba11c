package hostproxy

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
)

// TestDeliver_TheRouteChecksForTransportsOfTheHostApp: DeliverResult and
// DeliverEvent refuse what the POST routes refuse, with their status and
// code, as a *RefusalError.
func TestDeliver_TheRouteChecksForTransportsOfTheHostApp(t *testing.T) {
	h := newFakeHub()
	h.add("ext", wire.InterfaceChromeExtension, "alice", t0)
	p := newTestProxy(h)
	defer p.Close()

	var rej *RefusalError
	err := p.DeliverResult(ResultBody{}, "ext", "alice", TransportRemote, nil)
	require.True(t, errors.As(err, &rej))
	assert.Equal(t, http.StatusBadRequest, rej.Status)
	err = p.DeliverResult(ResultBody{RequestID: "r1", Content: "{}"}, "ext", "alice", TransportRemote, nil)
	require.True(t, errors.As(err, &rej))
	assert.Equal(t, "unknown_request", rej.Code)
	assert.Equal(t, http.StatusNotFound, rej.Status)

	ev := browserbackend.Event{Method: "Page.loadEventFired"}
	assert.NoError(t, p.DeliverEvent("ext", "alice", ev, true))
	err = p.DeliverEvent("ext", "mallory", ev, true)
	require.True(t, errors.As(err, &rej))
	assert.Equal(t, "wrong_actor", rej.Code)
	err = p.DeliverEvent("gone", "alice", ev, false)
	require.True(t, errors.As(err, &rej))
	assert.Equal(t, "unknown_client", rej.Code)
	assert.Contains(t, err.Error(), "hostproxy: unknown_client")
}
