package hostproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
)

// These tests run the proxy on the real in-process hub, which knows the
// requests' replay eligibility only from what the proxy published
// (Target.ReplayUntil) and retracted (Hub.Retract), and in-process subscriptions
// standing in for one extension client ("ext-1" of actor alice) that drops
// its stream and reconnects with Last-Event-ID (HUB-3, HUB-5).

type replayWorld struct {
	hub *eventhub.InProcess
	p   *Proxy
}

func newReplayWorld(t testing.TB) *replayWorld {
	hub := eventhub.New(eventhub.WithLogger(quietLogger()))
	p := New(Options{Hub: hub, Logger: quietLogger()})
	t.Cleanup(func() { _ = p.Close(); _ = hub.Close() })
	return &replayWorld{hub: hub, p: p}
}

// connect opens the client's stream, resuming after lastEventID if set.
func (w *replayWorld) connect(t testing.TB, lastEventID string) *eventhub.Subscription {
	t.Helper()
	sub, err := w.hub.Subscribe(eventhub.SubscribeRequest{ClientID: "ext-1",
		InterfaceID: wire.InterfaceChromeExtension, Actor: "alice", LastEventID: lastEventID})
	require.NoError(t, err)
	t.Cleanup(sub.Close)
	return sub
}

// mark publishes a marker event to the client.
func (w *replayWorld) mark(t testing.TB, name string) {
	t.Helper()
	_, err := w.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": name})
	require.NoError(t, err)
}

// next returns the next event on sub with its decoded message.
func next(t testing.TB, sub *eventhub.Subscription) (eventhub.Envelope, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // bounds a broken test only
	defer cancel()
	env, err := sub.Next(ctx)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(env.Message, &m))
	return env, m
}

// start connects the client, lets it read a marker (its Last-Event-ID from
// then on), and starts a click aimed at it; it returns the marker id, the
// published request as the client saw it, and the caller's outcome.
func (w *replayWorld) start(t testing.TB) (*eventhub.Subscription, string, map[string]any, <-chan outcome) {
	t.Helper()
	sub := w.connect(t, "")
	w.mark(t, "marker")
	env, m := next(t, sub)
	require.Equal(t, "marker", m["type"])
	done := make(chan outcome, 1)
	go func() {
		// The guard deadline only keeps a broken proxy from hanging the test.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := w.p.Request(ctx, Req{Method: "Input.dispatchMouseEvent", TargetClientID: "ext-1",
			SourceActor: "alice", Timeout: time.Hour})
		done <- outcome{res, err}
	}()
	// The request reaches the stream, but the client does not process it:
	// its Last-Event-ID stays at the marker.
	_, req := next(t, sub)
	require.Equal(t, wire.TypeHostBrowserRequest, req["type"])
	return sub, env.ID, req, done
}

func TestReplay_RequestFailedOnDisconnectIsNotReplayedToTheReconnect(t *testing.T) {
	w := newReplayWorld(t)
	sub1, markerID, _, done := w.start(t)
	// Control: an event published after the request and never read either,
	// which the same reconnect does replay.
	w.mark(t, "unread")

	sub1.Close() // the connection dies; nobody has reconnected
	out := <-done
	require.ErrorIs(t, out.err, browserbackend.ErrTransport, "fails at once on the disconnect (HUB-5)")
	assert.Empty(t, w.p.Interactions().List(nil))

	sub2 := w.connect(t, markerID)
	w.mark(t, "after")
	_, m := next(t, sub2)
	assert.Equal(t, "unread", m["type"], "the failed request must not be replayed, the later event is")
	_, m = next(t, sub2)
	assert.Equal(t, "after", m["type"])
}

func TestReplay_ReconnectBeforeTheProxyNoticesReplaysTheRequestAndItsResultCompletesTheOriginalCaller(t *testing.T) {
	w := newReplayWorld(t)
	_, markerID, req, done := w.start(t)

	// A reconnect with the same client id replaces the old stream: the new
	// registration is in place before the old one's Gone closes, so the
	// proxy sees the client connected again whenever it looks.
	sub2 := w.connect(t, markerID)
	_, m := next(t, sub2)
	require.Equal(t, wire.TypeHostBrowserRequest, m["type"], "replayed to the reconnect")
	require.Equal(t, req["requestId"], m["requestId"])

	rec := postResult(w.p, "ext-1", "alice", ResultBody{RequestID: m["requestId"].(string), Content: `{"clicked":true}`})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	out := <-done
	require.NoError(t, out.err)
	assert.JSONEq(t, `{"clicked":true}`, string(out.res))
	assert.Empty(t, w.p.Interactions().List(nil))
}

// A reconnect's replay carries the requests whose caller still waits, and
// every other event: not a request that got its result, nor one that timed
// out (its cancel is replayed).
func TestReplay_RequestsThatAreNoLongerPendingAreDroppedAndOtherEventsKept(t *testing.T) {
	w := newReplayWorld(t)
	sub1, markerID, pendingReq, done := w.start(t)

	answered := make(chan outcome, 1)
	go func() {
		res, err := w.p.Request(context.Background(), Req{Method: "Page.navigate", TargetClientID: "ext-1", Timeout: time.Hour})
		answered <- outcome{res, err}
	}()
	_, answeredReq := next(t, sub1)
	rec := postResult(w.p, "ext-1", "alice", ResultBody{RequestID: answeredReq["requestId"].(string), Content: `{}`})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, (<-answered).err)

	// A request that ends by its own (short) timeout: the client never answers.
	_, err := w.p.Request(context.Background(), Req{Method: "Page.reload", TargetClientID: "ext-1", Timeout: time.Millisecond})
	require.ErrorIs(t, err, browserbackend.ErrTimeout)
	_, timedOut := next(t, sub1)
	require.Equal(t, wire.TypeHostBrowserRequest, timedOut["type"])
	_, cancelMsg := next(t, sub1)
	require.Equal(t, wire.TypeHostBrowserCancel, cancelMsg["type"])
	w.mark(t, "other")

	sub2 := w.connect(t, markerID)
	w.mark(t, "after")
	var replay []string
	for {
		_, m := next(t, sub2)
		if m["type"] == "after" {
			break
		}
		id, _ := m["requestId"].(string)
		replay = append(replay, m["type"].(string)+" "+id)
	}
	assert.Equal(t, []string{
		wire.TypeHostBrowserRequest + " " + pendingReq["requestId"].(string),
		wire.TypeHostBrowserCancel + " " + timedOut["requestId"].(string),
		"other ",
	}, replay)

	rec = postResult(w.p, "ext-1", "alice", ResultBody{RequestID: pendingReq["requestId"].(string), Content: `{}`})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(t, (<-done).err)
}

// Many interleavings of a disconnect racing a reconnect: every run ends
// with exactly one of "the caller failed" and "the request was replayed and
// its result reached the caller", never both and never neither.
func TestReplay_RacingDisconnectAndReconnectNeverBothFailsTheCallerAndReplaysTheRequest(t *testing.T) {
	const runs = 500
	var failed, replayed int
	for i := range runs {
		w := newReplayWorld(t)
		sub1, markerID, req, done := w.start(t)

		var sub2 *eventhub.Subscription
		var wg sync.WaitGroup
		gate := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-gate; sub1.Close() }()
		go func() {
			defer wg.Done()
			<-gate
			s, err := w.hub.Subscribe(eventhub.SubscribeRequest{ClientID: "ext-1",
				InterfaceID: wire.InterfaceChromeExtension, Actor: "alice", LastEventID: markerID})
			if assert.NoError(t, err) {
				sub2 = s
			}
		}()
		close(gate)
		wg.Wait()
		require.NotNil(t, sub2)

		// Everything the reconnect gets before this marker is its replay.
		w.mark(t, "after")
		gotRequest := false
		for {
			_, m := next(t, sub2)
			if m["type"] == "after" {
				break
			}
			if m["type"] == wire.TypeHostBrowserRequest && m["requestId"] == req["requestId"] {
				gotRequest = true
			}
		}
		if gotRequest {
			replayed++
			rec := postResult(w.p, "ext-1", "alice", ResultBody{RequestID: req["requestId"].(string), Content: `{}`})
			out := <-done
			require.NoErrorf(t, out.err, "run %d: the request was replayed but its caller failed", i)
			require.Equalf(t, http.StatusOK, rec.Code, "run %d", i)
		} else {
			failed++
			out := <-done
			require.ErrorIsf(t, out.err, browserbackend.ErrTransport, "run %d: not replayed, so the caller must fail at once", i)
		}
		sub2.Close()
		_ = w.p.Close()
		_ = w.hub.Close()
	}
	t.Logf("%d runs: %d callers failed (request not replayed), %d requests replayed and completed", runs, failed, replayed)
}
