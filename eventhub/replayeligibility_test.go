package eventhub_test

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
)

// Replay eligibility is data the publisher gives the hub (Target.ReplayUntil)
// and a Retract it calls; the hub never looks into a message to decide.

// An event retracted, or past its ReplayUntil, is left out of an SSE
// reconnect's replay; the others are replayed in order, and live delivery
// is never affected.
func TestReplayEligibility_RetractedAndExpiredEventsAreLeftOutOfAnSSEReplayButNotOutOfLiveDelivery(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	s1 := f.dial(t, "ext", wire.InterfaceChromeExtension, "alice")
	publish := func(msg string, until time.Time) string {
		t.Helper()
		id, err := f.hub.Publish(ctx, eventhub.Target{ClientID: "ext", ReplayUntil: until}, "c", msg)
		require.NoError(t, err)
		return id
	}
	publish("first", time.Time{})
	_, err := s1.NextEvent(ctx)
	require.NoError(t, err)
	resume := s1.LastEventID

	// Published to the old stream and never read.
	publish("keep-1", time.Time{})
	stale := publish("stale-1", time.Time{})
	publish("expired-1", t0.Add(time.Second))
	publish("keep-2", t0.Add(time.Hour))
	held, err := f.hub.Retract(ctx, stale)
	require.NoError(t, err)
	assert.True(t, held, "queued live to the client's current registration")
	f.clock.Advance(2 * time.Second) // expired-1 is past its ReplayUntil

	o := dialAs("ext", wire.InterfaceChromeExtension, "alice")
	o.LastEventID = resume
	s2, err := f.dialOpts(t, o)
	require.NoError(t, err)
	live := publish("stale-live", time.Time{})
	_, err = f.hub.Retract(ctx, live) // already queued: live delivery is not undone
	require.NoError(t, err)
	var got []string
	for range 3 {
		env, err := s2.NextEvent(ctx)
		require.NoError(t, err)
		var s string
		require.NoError(t, json.Unmarshal(env.Message, &s))
		got = append(got, s)
	}
	assert.Equal(t, []string{"keep-1", "keep-2", "stale-live"}, got)
}

// Retract is decided against registrations under the hub's lock: a
// registration that started before it has the event in its replay and
// Retract says the client holds it; one that starts after it does not get
// it, and Retract then says so.
func TestReplayEligibility_RetractReportsWhetherTheTargetsCurrentRegistrationHoldsTheEvent(t *testing.T) {
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { _ = hub.Close() })
	ctx := testCtx(t)
	req := eventhub.SubscribeRequest{ClientID: "ext", InterfaceID: wire.InterfaceChromeExtension, Actor: "alice"}
	sub1, err := hub.Subscribe(req)
	require.NoError(t, err)
	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "first")
	require.NoError(t, err)
	read, err := sub1.Next(ctx)
	require.NoError(t, err)
	a, err := hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "a")
	require.NoError(t, err)
	b, err := hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "b")
	require.NoError(t, err)
	sub1.Close()

	held, err := hub.Retract(ctx, b)
	require.NoError(t, err)
	assert.False(t, held, "nobody is connected")

	// The reconnect resumes after "first": its replay has a, not b.
	req.LastEventID = read.ID
	sub2, err := hub.Subscribe(req)
	require.NoError(t, err)
	defer sub2.Close()
	held, err = hub.Retract(ctx, a)
	require.NoError(t, err)
	assert.True(t, held, "the reconnect got it in its replay")
	held, err = hub.Retract(ctx, b)
	require.NoError(t, err)
	assert.False(t, held, "retracted before the reconnect: not in its replay")
	env, err := sub2.Next(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"a"`, string(env.Message))

	// A registration that resumes past an event holds it (the client read it).
	sub2.Close()
	req.LastEventID = env.ID
	sub3, err := hub.Subscribe(req)
	require.NoError(t, err)
	defer sub3.Close()
	held, err = hub.Retract(ctx, a)
	require.NoError(t, err)
	assert.True(t, held)

	// Another actor reusing the client id does not hold it; unknown ids are
	// not an error.
	sub3.Close()
	sub4, err := hub.Subscribe(eventhub.SubscribeRequest{ClientID: "ext", InterfaceID: wire.InterfaceChromeExtension, Actor: "mallory"})
	require.NoError(t, err)
	defer sub4.Close()
	held, err = hub.Retract(ctx, a)
	require.NoError(t, err)
	assert.False(t, held)
	held, err = hub.Retract(ctx, "nope")
	require.NoError(t, err)
	assert.False(t, held)
}

// An event that left the replay ring before its ReplayUntil is still known
// to Retract, so a publisher learns that the client holds it.
func TestReplayEligibility_RetractStillAnswersForAnAwaitedEventThatLeftTheRing(t *testing.T) {
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)), eventhub.WithReplay(eventhub.ReplayLimits{Count: 1}))
	t.Cleanup(func() { _ = hub.Close() })
	ctx := testCtx(t)
	sub, err := hub.Subscribe(eventhub.SubscribeRequest{ClientID: "ext", InterfaceID: wire.InterfaceChromeExtension, Actor: "alice"})
	require.NoError(t, err)
	defer sub.Close()
	awaited, err := hub.Publish(ctx, eventhub.Target{ClientID: "ext", ReplayUntil: time.Now().Add(time.Hour)}, "", "req")
	require.NoError(t, err)
	plain, err := hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "x")
	require.NoError(t, err)
	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "", "y") // pushes both out of the ring
	require.NoError(t, err)
	held, err := hub.Retract(ctx, awaited)
	require.NoError(t, err)
	assert.True(t, held)
	held, err = hub.Retract(ctx, plain)
	require.NoError(t, err)
	assert.False(t, held, "forgotten once it left the ring")
}
