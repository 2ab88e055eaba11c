package eventhub_test

import (
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
)

// dropStale keeps every event except JSON strings starting with "stale".
func dropStale(seen *[]string, mu *sync.Mutex) eventhub.ReplayFilter {
	return func(clientID string, env eventhub.Envelope) bool {
		var s string
		_ = json.Unmarshal(env.Message, &s)
		mu.Lock()
		*seen = append(*seen, clientID+":"+s)
		mu.Unlock()
		return len(s) < 5 || s[:5] != "stale"
	}
}

func TestReplayFilter_DropsRejectedEventsFromAnSSEReconnectsReplayButNotFromLiveDelivery(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	f := newFixture(t, eventhub.WithReplayFilter(dropStale(&seen, &mu)))
	ctx := testCtx(t)
	s1 := f.dial(t, "ext", eventhub.InterfaceChromeExtension, "alice")
	publish := func(msg string) {
		t.Helper()
		_, err := f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "c", msg)
		require.NoError(t, err)
	}
	publish("first")
	_, err := s1.NextEvent(ctx)
	require.NoError(t, err)
	resume := s1.LastEventID

	// Published to the old stream and never read.
	publish("keep-1")
	publish("stale-1")
	publish("keep-2")
	o := dialAs("ext", eventhub.InterfaceChromeExtension, "alice")
	o.LastEventID = resume
	s2, err := f.dialOpts(t, o)
	require.NoError(t, err)
	publish("stale-live") // live events are never filtered
	var got []string
	for range 3 {
		env, err := s2.NextEvent(ctx)
		require.NoError(t, err)
		var s string
		require.NoError(t, json.Unmarshal(env.Message, &s))
		got = append(got, s)
	}
	assert.Equal(t, []string{"keep-1", "keep-2", "stale-live"}, got)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"ext:keep-1", "ext:stale-1", "ext:keep-2"}, seen,
		"consulted once per replay candidate, in order, with the client id")
}

func TestReplayFilter_RunsAfterTheReconnectIsRegisteredAndMayCallTheHub(t *testing.T) {
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { _ = hub.Close() })
	ctx := testCtx(t)
	type view struct {
		connected, goneOpen bool
	}
	var views []view
	hub.SetReplayFilter(func(clientID string, env eventhub.Envelope) bool {
		_, ok := hub.Client(clientID) // would deadlock if called under the hub's lock
		views = append(views, view{ok, !isClosed(hub.Gone(clientID))})
		return false
	})
	req := eventhub.SubscribeRequest{ClientID: "ext", InterfaceID: eventhub.InterfaceChromeExtension, Actor: "alice"}
	sub1, err := hub.Subscribe(req)
	require.NoError(t, err)
	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "first")
	require.NoError(t, err)
	env, err := sub1.Next(ctx)
	require.NoError(t, err)
	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "unread")
	require.NoError(t, err)
	sub1.Close()

	req.LastEventID = env.ID
	sub2, err := hub.Subscribe(req)
	require.NoError(t, err)
	defer sub2.Close()
	assert.Equal(t, []view{{connected: true, goneOpen: true}}, views,
		"the filter sees the new registration connected, and Gone is its open channel")
	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "live")
	require.NoError(t, err)
	env, err = sub2.Next(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"live"`, string(env.Message), "the rejected event was dropped from the replay")

	// SetReplayFilter(nil) restores plain replay.
	hub.SetReplayFilter(nil)
	sub3, err := hub.Subscribe(req)
	require.NoError(t, err)
	defer sub3.Close()
	env, err = sub3.Next(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"unread"`, string(env.Message))
}
