package eventhub_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func TestStalledReaderIsShedMemoryStaysFlatAndShedIsObservable(t *testing.T) {
	const (
		queueSize  = 64
		ringBytes  = 1 << 20
		events     = 100_000
		payloadLen = 1000
	)
	sheds := make(chan eventhub.ShedInfo, 4)
	f := newFixture(t,
		eventhub.WithQueueSize(queueSize),
		eventhub.WithReplay(eventhub.ReplayLimits{Count: 512, Bytes: ringBytes}),
		eventhub.WithHooks(eventhub.Hooks{OnShed: func(si eventhub.ShedInfo) { sheds <- si }}))
	ctx := testCtx(t)
	o := dialAs("stalled", wire.InterfaceMacOS, "alice")
	o.ReadBuffer = 4096
	stalled, err := f.dialOpts(t, o) // reads the first heartbeat, then never again
	require.NoError(t, err)
	_ = stalled
	gone := f.hub.Gone("stalled")

	payload := map[string]string{"type": "assistant_text_delta", "text": strings.Repeat("x", payloadLen)}
	frameSize := uint64(payloadLen + 200)
	// Generous: every queued frame four times over, the ring twice, and
	// 8 MiB for the runtime, the HTTP server and the race detector. The
	// 100 000 events total ~110 MB, so retaining them fails the bound.
	bound := 4*queueSize*frameSize + 2*ringBytes + 8<<20

	before := heapInuse()
	var peak uint64
	for i := range events {
		_, err := f.hub.Publish(ctx, eventhub.Target{ConversationID: "conv"}, "conv", payload)
		require.NoError(t, err)
		if i%25_000 == 24_999 {
			if h := heapInuse(); h > peak {
				peak = h
			}
		}
	}
	grown := int64(peak) - int64(before)
	t.Logf("heap in use: before %d KiB, peak %d KiB, growth %d KiB (bound %d KiB)", before>>10, peak>>10, grown>>10, bound>>10)
	assert.Less(t, grown, int64(bound), "memory must stay bounded while a stalled reader is sent 100k events")

	waitClosed(t, gone, "Gone of the shed client")
	var si eventhub.ShedInfo
	select {
	case si = <-sheds:
	case <-ctx.Done():
		t.Fatal("no shed hook call")
	}
	assert.Equal(t, eventhub.ShedQueueFull, si.Reason)
	assert.Equal(t, "stalled", si.ClientID)
	assert.Equal(t, wire.InterfaceMacOS, si.InterfaceID)
	assert.Equal(t, uint64(1), si.HeartbeatsSent)
	assert.Less(t, si.EventsDelivered, uint64(events), "it stopped reading long before the end")
	assert.LessOrEqual(t, si.QueueLen, queueSize) // the writer may be draining at that instant
	assert.Equal(t, time.Duration(0), si.StreamAge, "the manual clock did not move")

	recs := f.logs.find("eventhub: subscriber shed")
	require.Len(t, recs, 1)
	rec := recs[0]
	assert.Equal(t, "WARN", rec["level"].String())
	assert.Equal(t, "queue_full", rec["reason"].String())
	assert.Equal(t, "stalled", rec["clientId"].String())
	assert.Equal(t, "macos", rec["interfaceId"].String())
	assert.Equal(t, si.EventsDelivered, rec["eventsDelivered"].Uint64())
	assert.Equal(t, uint64(1), rec["heartbeatsSent"].Uint64())
	assert.Contains(t, rec, "streamAge")

	_, err = f.hub.Publish(ctx, eventhub.Target{ClientID: "stalled"}, "", 1)
	require.ErrorIs(t, err, eventhub.ErrNotConnected, "a shed client is gone for publishers at once")
	assert.Empty(t, f.hub.Roster())
}

func TestWriteBlockedPastDeadlineShedsStream(t *testing.T) {
	sheds := make(chan eventhub.ShedInfo, 4)
	f := newFixture(t,
		eventhub.WithQueueSize(100_000), // the queue never overflows here
		eventhub.WithWriteTimeout(100*time.Millisecond),
		eventhub.WithHooks(eventhub.Hooks{OnShed: func(si eventhub.ShedInfo) { sheds <- si }}))
	ctx := testCtx(t)
	o := dialAs("stuck", wire.InterfaceChromeExtension, "alice")
	o.ReadBuffer = 4096
	_, err := f.dialOpts(t, o)
	require.NoError(t, err)
	gone := f.hub.Gone("stuck")
	big := strings.Repeat("y", 8<<10)
	// 2000 × 8 KiB is far more than the socket buffers hold: the writer
	// blocks and its write deadline passes.
	for range 2000 {
		if _, err := f.hub.Publish(ctx, eventhub.Target{ClientID: "stuck"}, "", big); err != nil {
			require.ErrorIs(t, err, eventhub.ErrNotConnected)
			break
		}
	}
	select {
	case si := <-sheds:
		assert.Equal(t, eventhub.ShedWriteTimeout, si.Reason)
		assert.Equal(t, "stuck", si.ClientID)
	case <-ctx.Done():
		t.Fatal("no shed")
	}
	waitClosed(t, gone, "Gone")
}

func TestLivenessClientThatStopsReadingTurnsUnhealthyAndLosesItsPlaceBeforeTCPDies(t *testing.T) {
	health := make(chan eventhub.ClientInfo, 8)
	f := newFixture(t, eventhub.WithHooks(eventhub.Hooks{OnHealth: func(c eventhub.ClientInfo) { health <- c }}))
	ctx := testCtx(t)
	oa := dialAs("a", wire.InterfaceChromeExtension, "alice")
	oa.ReadBuffer = 4096
	_, err := f.dialOpts(t, oa) // a reads its first heartbeat and then stops reading
	require.NoError(t, err)
	f.clock.Advance(time.Second)
	b := f.dial(t, "b", wire.InterfaceChromeExtension, "alice")
	f.clock.Advance(time.Second)
	f.hub.Touch("a") // a result post from a, before it stalls
	assert.Equal(t, []string{"a", "b"}, rosterIDs(f.hub), "a was most recently active")

	// b keeps reading and acknowledging heartbeats; a does not.
	for range 3 {
		f.clock.Advance(7 * time.Second)
		tok, _, err := b.NextHeartbeat(ctx)
		require.NoError(t, err)
		code, err := eventhubtest.Ping(ctx, f.srv.PingURL(), "b", tok, eventhubtest.ActorHeader("alice"))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}
	// Now t0+23s: a was last active at t0+2s, 21 s ago — the edge.
	r := f.hub.Roster()
	assert.Equal(t, []string{"b", "a"}, rosterIDs(f.hub), "a lost its place to the reading client")
	assert.True(t, r[1].Healthy, "still within the window")

	f.clock.Advance(time.Second) // 22 s without activity
	c, ok := f.hub.Client("a")
	require.True(t, ok)
	assert.False(t, c.Healthy, "Roster and Client evaluate health at once")

	// The transition is announced (Changed, OnHealth) at the stream's next
	// heartbeat tick, t0+28s.
	changed := f.hub.Changed()
	f.clock.Advance(5 * time.Second)
	waitClosed(t, changed, "Changed on the health transition")
	select {
	case c := <-health:
		assert.Equal(t, "a", c.ClientID)
		assert.False(t, c.Healthy)
	case <-ctx.Done():
		t.Fatal("no OnHealth hook")
	}
	r = f.hub.Roster()
	require.Len(t, r, 2)
	assert.Equal(t, "b", r[0].ClientID)
	assert.True(t, r[0].Healthy)
	assert.Equal(t, "a", r[1].ClientID)
	assert.False(t, r[1].Healthy, "a is reported unhealthy")
	// Its TCP connection is still up: the registration has not ended.
	assert.False(t, isClosed(f.hub.Gone("a")), "reported before the connection dies")
	assert.NotEmpty(t, f.logs.find("eventhub: client unhealthy: no activity"))

	// A result post brings it back.
	f.hub.Touch("a")
	c, _ = f.hub.Client("a")
	assert.True(t, c.Healthy)
	_ = context.Background
}

func TestHubCloseUnblocksWriterStuckOnStalledClient(t *testing.T) {
	// An hour-long write timeout: only the hub's abort can unblock the
	// writer before the test's deadline.
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)),
		eventhub.WithQueueSize(100_000), eventhub.WithWriteTimeout(time.Hour))
	closed := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(eventhubtest.ActorFromHeader(hub.EventsHandler()))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	defer hub.Close()
	ctx := testCtx(t)
	o := dialAs("stuck", wire.InterfaceMacOS, "alice")
	o.ReadBuffer = 4096
	s, err := eventhubtest.Dial(ctx, srv.URL, o)
	require.NoError(t, err)
	defer s.Close()
	_, _, err = s.NextHeartbeat(ctx)
	require.NoError(t, err)
	big := strings.Repeat("z", 8<<10)
	for range 2000 { // far beyond the socket buffers: the writer blocks
		_, err := hub.Publish(ctx, eventhub.Target{ClientID: "stuck"}, "", big)
		require.NoError(t, err)
	}
	require.NoError(t, hub.Close())
	// The client still reads nothing, so only the abort can end the
	// handler; then the server closes the connection.
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("the handler stayed blocked in a write after hub.Close")
	}
}
