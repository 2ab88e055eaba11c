package hostproxy

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInteractions_DeliverTakeClose: a call is either delivered, taken back
// by its caller or failed by close, once; close leaves the host app's own
// interactions and fails later calls with its cause.
func TestInteractions_DeliverTakeClose(t *testing.T) {
	tab := newInteractions()
	a := newCall(Interaction{RequestID: "a", Kind: KindHostBrowser, TargetClientID: "c1"}, t0)
	b := newCall(Interaction{RequestID: "b", Kind: KindHostBrowser, TargetClientID: "c1"}, t0)
	c := newCall(Interaction{RequestID: "c", Kind: KindHostBrowser, TargetClientID: "c2"}, t0)
	for _, e := range []*call{a, b, c} {
		require.NoError(t, tab.add(e))
	}
	require.ErrorIs(t, tab.add(newCall(Interaction{RequestID: "a"}, t0)), ErrDuplicateRequest)
	require.NoError(t, tab.Register(Interaction{RequestID: "own", Kind: "bash"}))
	assert.True(t, tab.awaits("c1"))
	n, oldest := tab.inFlight("c1", t0.Add(time.Second))
	assert.Equal(t, 2, n)
	assert.Equal(t, time.Second, oldest)

	assert.True(t, tab.deliver(ResultBody{RequestID: "a", Content: "{}"}))
	assert.False(t, tab.deliver(ResultBody{RequestID: "a"}), "delivered once")
	res, delivered := tab.take(a)
	assert.True(t, delivered, "the caller that gave up still gets the delivered result")
	assert.Equal(t, "{}", res.Content)

	_, delivered = tab.take(b)
	assert.False(t, delivered)
	assert.False(t, tab.deliver(ResultBody{RequestID: "b"}), "taken back: nobody to deliver to")
	assert.False(t, tab.awaits("c1"))
	assert.False(t, tab.deliver(ResultBody{RequestID: "own"}), "nobody waits for the host app's own interaction")

	cause := errors.New("gone")
	tab.close(cause)
	select {
	case <-c.failed:
		assert.Equal(t, cause, c.err)
	default:
		t.Fatal("close did not fail the pending call")
	}
	assert.False(t, tab.isPending(c))
	assert.False(t, tab.awaits("c2"))
	ids := []string{}
	for _, in := range tab.List(nil) {
		ids = append(ids, in.RequestID)
	}
	assert.Equal(t, []string{"own"}, ids, "the host app's interactions stay")
	assert.ErrorIs(t, tab.add(newCall(Interaction{RequestID: "d"}, t0)), cause)
}
