package eventhub_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
)

func TestCapabilityTableFollowsHUB2(t *testing.T) {
	all := []eventhub.Capability{eventhub.CapHostBash, eventhub.CapHostFile, eventhub.CapHostCU,
		eventhub.CapHostAppControl, eventhub.CapHostBrowser, eventhub.CapHostUISnapshot}
	want := map[string][]eventhub.Capability{
		wire.InterfaceChromeExtension: {eventhub.CapHostBrowser},
		wire.InterfaceMacOS:           all,
		wire.InterfaceWindows: {eventhub.CapHostBash, eventhub.CapHostFile, eventhub.CapHostCU,
			eventhub.CapHostBrowser, eventhub.CapHostUISnapshot},
		wire.InterfaceWeb: nil,
		wire.InterfaceCLI: nil,
		"unknown":         nil,
	}
	for iface, caps := range want {
		assert.ElementsMatch(t, caps, eventhub.Capabilities(iface), iface)
		for _, c := range all {
			assert.Equal(t, slices.Contains(caps, c), eventhub.Supports(iface, c), "%s %s", iface, c)
		}
	}
	assert.True(t, eventhub.IsDesktop(wire.InterfaceMacOS))
	assert.True(t, eventhub.IsDesktop(wire.InterfaceWindows))
	assert.False(t, eventhub.IsDesktop(wire.InterfaceChromeExtension), "the extension is not a full desktop client")
	assert.False(t, eventhub.IsDesktop(wire.InterfaceWeb))
	// The result is the caller's to keep.
	c := eventhub.Capabilities(wire.InterfaceMacOS)
	c[0] = "mutated"
	assert.True(t, eventhub.Supports(wire.InterfaceMacOS, eventhub.CapHostBash))
}

func TestPublishToNotConnectedClientFailsAtOnce(t *testing.T) {
	h := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))
	defer h.Close()
	ctx := context.Background()
	_, err := h.Publish(ctx, eventhub.Target{ClientID: "nobody"}, "conv", map[string]string{"type": "x"})
	require.ErrorIs(t, err, eventhub.ErrNotConnected)
	assert.Contains(t, err.Error(), "eventhub: ")

	_, err = h.Publish(ctx, eventhub.Target{Capability: eventhub.CapHostBrowser}, "", 1)
	require.ErrorIs(t, err, eventhub.ErrNoRecipients)
	_, err = h.Publish(ctx, eventhub.Target{InterfaceID: wire.InterfaceMacOS}, "", 1)
	require.ErrorIs(t, err, eventhub.ErrNoRecipients)
	_, err = h.Publish(ctx, eventhub.Target{}, "", 1)
	require.ErrorIs(t, err, eventhub.ErrEmptyTarget)
	_, err = h.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c", make(chan int))
	require.Error(t, err, "unmarshalable message")

	// A conversation event with no subscriber is kept for replay, not an error.
	id, err := h.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c", 1)
	require.NoError(t, err)
	assert.NotEmpty(t, id)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = h.Publish(cctx, eventhub.Target{ConversationID: "c"}, "c", 1)
	require.ErrorIs(t, err, context.Canceled)

	require.NoError(t, h.Close())
	_, err = h.Publish(ctx, eventhub.Target{ConversationID: "c"}, "c", 1)
	require.ErrorIs(t, err, eventhub.ErrClosed)
}

func TestPublishToDisconnectedClientFailsAtOnceOverHTTP(t *testing.T) {
	f := newFixture(t)
	s := f.dial(t, "ext-1", wire.InterfaceChromeExtension, "alice")
	gone := f.hub.Gone("ext-1")
	s.Close()
	waitClosed(t, gone, "Gone after the client disconnected")
	_, err := f.hub.Publish(context.Background(), eventhub.Target{ClientID: "ext-1"}, "", 1)
	require.ErrorIs(t, err, eventhub.ErrNotConnected)
}

func TestRosterWhereKeepsOnlyMatchingClientsInRosterOrder(t *testing.T) {
	f := newFixture(t, eventhub.WithHeartbeatInterval(time.Second), eventhub.WithUnhealthyAfter(30*time.Second))
	f.dial(t, "a", wire.InterfaceMacOS, "alice")
	f.clock.Advance(time.Second)
	f.dial(t, "b", wire.InterfaceChromeExtension, "bob")
	f.clock.Advance(time.Second)
	f.dial(t, "c", wire.InterfaceChromeExtension, "alice")
	alice := func(c eventhub.ClientInfo) bool { return c.ActorPrincipalID == "alice" }
	got := f.hub.RosterWhere(alice)
	require.Len(t, got, 2)
	assert.Equal(t, []string{"c", "a"}, []string{got[0].ClientID, got[1].ClientID}, "newest first, as Roster")
	assert.True(t, got[0].Healthy)
	got[0].Capabilities[0] = "changed"
	info, ok := f.hub.Client("c")
	require.True(t, ok)
	assert.Equal(t, []eventhub.Capability{eventhub.CapHostBrowser}, info.Capabilities, "a copy, not the hub's own")
	assert.Empty(t, f.hub.RosterWhere(func(eventhub.ClientInfo) bool { return false }))
	assert.Len(t, f.hub.RosterWhere(nil), 3)
}

func TestRosterOrderHealthyFirstThenMostRecentlyActive(t *testing.T) {
	f := newFixture(t, eventhub.WithHeartbeatInterval(time.Second), eventhub.WithUnhealthyAfter(30*time.Second))
	f.dial(t, "a", wire.InterfaceMacOS, "alice")
	f.clock.Advance(time.Second)
	f.dial(t, "b", wire.InterfaceChromeExtension, "alice")
	f.clock.Advance(time.Second)
	oc := dialAs("c", wire.InterfaceWindows, "bob")
	oc.MachineName = "bob-laptop"
	_, err := f.dialOpts(t, oc)
	require.NoError(t, err)
	// Registration counts as activity: newest first.
	assert.Equal(t, []string{"c", "b", "a"}, rosterIDs(f.hub))

	f.clock.Advance(time.Second)
	f.hub.Touch("a")
	assert.Equal(t, []string{"a", "c", "b"}, rosterIDs(f.hub))

	// 29 s later b (last active at t0+1s) is past the window, a and c not.
	f.clock.Advance(29 * time.Second)
	f.hub.Touch("c")
	r := f.hub.Roster()
	require.Len(t, r, 3)
	assert.Equal(t, []string{"c", "a", "b"}, rosterIDs(f.hub))
	assert.True(t, r[0].Healthy)
	assert.True(t, r[1].Healthy)
	assert.False(t, r[2].Healthy, "b shows no activity for longer than the window")

	info, ok := f.hub.Client("b")
	require.True(t, ok)
	assert.Equal(t, wire.InterfaceChromeExtension, info.InterfaceID)
	assert.Equal(t, []eventhub.Capability{eventhub.CapHostBrowser}, info.Capabilities)
	assert.Equal(t, "alice", info.ActorPrincipalID)
	assert.Equal(t, t0.Add(time.Second), info.ConnectedAt)
	_, ok = f.hub.Client("nobody")
	assert.False(t, ok)
	info, _ = f.hub.Client("c")
	assert.Equal(t, "bob-laptop", info.MachineName)
	assert.Equal(t, "bob", info.ActorPrincipalID, "the actor comes from the auth context")
}

func TestChangedFiresOnRegisterAndUnregisterAndGoneOnEnd(t *testing.T) {
	f := newFixture(t)
	assert.True(t, isClosed(f.hub.Gone("x")), "Gone of a client that is not connected is already closed")

	ch := f.hub.Changed()
	assert.False(t, isClosed(ch))
	f.dial(t, "x", wire.InterfaceMacOS, "alice")
	assert.True(t, isClosed(ch), "register fires Changed")

	gone := f.hub.Gone("x")
	assert.False(t, isClosed(gone), "Gone is open while connected")
	ch = f.hub.Changed()
	// Touch alone is not a roster change.
	f.hub.Touch("x")
	assert.False(t, isClosed(ch))

	assert.True(t, f.hub.Unregister("x"))
	assert.True(t, isClosed(ch), "unregister fires Changed")
	assert.True(t, isClosed(gone), "unregister closes Gone")
	assert.False(t, f.hub.Unregister("x"))
	assert.Empty(t, f.hub.Roster())
}

func TestGoneFiresAtOnceWhenClientDisconnects(t *testing.T) {
	f := newFixture(t)
	s := f.dial(t, "x", wire.InterfaceMacOS, "alice")
	gone := f.hub.Gone("x")
	changed := f.hub.Changed()
	s.Close()
	// No clock advance and no heartbeat needed: the request context ends
	// when the peer closes the connection.
	waitClosed(t, gone, "Gone")
	waitClosed(t, changed, "Changed")
	_, ok := f.hub.Client("x")
	assert.False(t, ok)
	recs := f.logs.find("eventhub: client unregistered")
	_ = recs // logged on the hook goroutine; order checked in the shed test
}

func TestHubCloseEndsStreamsAndRefusesNewOnes(t *testing.T) {
	f := newFixture(t)
	s := f.dial(t, "x", wire.InterfaceMacOS, "alice")
	gone := f.hub.Gone("x")
	require.NoError(t, f.hub.Close())
	require.NoError(t, f.hub.Close(), "idempotent")
	assert.True(t, isClosed(gone))
	_, err := s.Next(testCtx(t))
	assert.Error(t, err, "the stream ends")
	_, err = f.dialOpts(t, dialAs("y", wire.InterfaceMacOS, "alice"))
	var se interface{ Error() string }
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "503")
}

func TestInProcessSubscribeRegistersTargetsAndSheds(t *testing.T) {
	sheds := make(chan eventhub.ShedInfo, 1)
	h := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)), eventhub.WithQueueSize(2), eventhub.WithHooks(eventhub.Hooks{OnShed: func(si eventhub.ShedInfo) { sheds <- si }}))
	defer h.Close()
	ctx := context.Background()
	_, err := h.Subscribe(eventhub.SubscribeRequest{ClientID: "x"})
	require.ErrorIs(t, err, eventhub.ErrInvalidHeader, "interface id required")

	sub, err := h.Subscribe(eventhub.SubscribeRequest{ClientID: "x", InterfaceID: wire.InterfaceChromeExtension, Actor: "alice"})
	require.NoError(t, err)
	id, err := h.Publish(ctx, eventhub.Target{ClientID: "x"}, "c", "one")
	require.NoError(t, err)
	env, err := sub.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, id, env.ID)
	assert.JSONEq(t, `"one"`, string(env.Message))

	_, err = h.Subscribe(eventhub.SubscribeRequest{ClientID: "x", InterfaceID: wire.InterfaceChromeExtension, Actor: "bob"})
	require.ErrorIs(t, err, eventhub.ErrActorMismatch)

	// Two fit in the queue, the third sheds the subscription.
	for range 3 {
		_, err = h.Publish(ctx, eventhub.Target{Capability: eventhub.CapHostBrowser}, "", "x")
		require.NoError(t, err)
	}
	si := <-sheds
	assert.Equal(t, eventhub.ShedQueueFull, si.Reason)
	assert.True(t, isClosed(sub.Done()))
	// What was queued before the shed is still readable, then the end.
	for range 2 {
		_, err = sub.Next(ctx)
		require.NoError(t, err)
	}
	_, err = sub.Next(ctx)
	require.ErrorIs(t, err, eventhub.ErrNotConnected)
	assert.Contains(t, err.Error(), "queue_full")
	sub.Close()
}
