package eventhub_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
)

func dialAs(clientID, iface, actor string) eventhubtest.DialOptions {
	return eventhubtest.DialOptions{ClientID: clientID, InterfaceID: iface, Header: eventhubtest.ActorHeader(actor)}
}

func statusOf(err error) int {
	var se *eventhubtest.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func TestHeartbeatAtOnceAndPeriodically(t *testing.T) {
	f := newFixture(t) // default 7 s interval
	ctx := testCtx(t)
	s, err := eventhubtest.Dial(ctx, f.srv.EventsURL(), dialAs("x", wire.InterfaceMacOS, "alice"))
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, "text/event-stream", s.Response().Header.Get("Content-Type"))

	// At once: no clock movement at all.
	first, skipped, err := s.NextHeartbeat(ctx)
	require.NoError(t, err)
	assert.Empty(t, skipped)
	assert.NotEmpty(t, first)

	// Short of the interval nothing is due; an event published now is the
	// next frame, which proves no heartbeat was written in between.
	f.clock.Advance(6 * time.Second)
	_, err = f.hub.Publish(ctx, eventhub.Target{ClientID: "x"}, "", "marker")
	require.NoError(t, err)
	fr, err := s.Next(ctx)
	require.NoError(t, err)
	require.False(t, fr.IsComment, "no heartbeat before the interval")

	for i := 0; i < 3; i++ {
		f.clock.Advance(time.Second) // reaches 7 s, then 14 s ...
		if i > 0 {
			f.clock.Advance(6 * time.Second)
		}
		tok, skipped, err := s.NextHeartbeat(ctx)
		require.NoError(t, err)
		assert.Empty(t, skipped)
		assert.NotEqual(t, first, tok, "every heartbeat carries a fresh token")
		first = tok
	}
	info, _ := f.hub.Client("x")
	assert.Equal(t, t0, info.LastActive, "server writes do not count as client activity")
}

func TestReconnectWithSameClientIDReplacesOldStream(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	old := f.dial(t, "x", wire.InterfaceMacOS, "alice")
	oldGone := f.hub.Gone("x")
	changed := f.hub.Changed()

	fresh := f.dial(t, "x", wire.InterfaceMacOS, "alice")
	assert.True(t, isClosed(oldGone), "the old registration's Gone fires")
	assert.True(t, isClosed(changed))
	assert.False(t, isClosed(f.hub.Gone("x")), "the new registration is live")
	assert.Equal(t, []string{"x"}, rosterIDs(f.hub))

	// The old stream is closed by the server.
	for {
		_, err := old.Next(ctx)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
	}
	_, err := f.hub.Publish(ctx, eventhub.Target{ClientID: "x"}, "", "hello")
	require.NoError(t, err)
	env, err := fresh.NextEvent(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"hello"`, string(env.Message))
}

func TestReconnectUnderAnotherActorIsRefused(t *testing.T) {
	f := newFixture(t)
	f.dial(t, "x", wire.InterfaceMacOS, "alice")
	gone := f.hub.Gone("x")
	_, err := f.dialOpts(t, dialAs("x", wire.InterfaceMacOS, "mallory"))
	assert.Equal(t, http.StatusConflict, statusOf(err))
	assert.False(t, isClosed(gone), "alice's stream survives")
}

func TestSubscriberCapEvictsOldest(t *testing.T) {
	sheds := make(chan eventhub.ShedInfo, 8)
	f := newFixture(t, eventhub.WithMaxSubscribers(2), eventhub.WithHooks(eventhub.Hooks{
		OnShed: func(si eventhub.ShedInfo) { sheds <- si },
	}))
	ctx := testCtx(t)
	a := f.dial(t, "a", wire.InterfaceMacOS, "alice")
	f.clock.Advance(time.Second)
	f.dial(t, "b", wire.InterfaceMacOS, "alice")
	goneA := f.hub.Gone("a")
	f.dial(t, "c", wire.InterfaceMacOS, "alice")
	assert.True(t, isClosed(goneA), "the oldest stream was evicted")
	assert.ElementsMatch(t, []string{"b", "c"}, rosterIDs(f.hub))
	for {
		if _, err := a.Next(ctx); err != nil {
			break
		}
	}
	si := <-sheds
	assert.Equal(t, eventhub.ShedEvicted, si.Reason)
	assert.Equal(t, "a", si.ClientID)
	assert.Equal(t, time.Second, si.StreamAge)
	recs := f.logs.find("eventhub: subscriber shed")
	require.Len(t, recs, 1, "the log precedes the hook on the hook goroutine")
	rec := recs[0]
	assert.Equal(t, "WARN", rec["level"].String())
	assert.Equal(t, "evicted", rec["reason"].String())
	assert.Equal(t, "a", rec["clientId"].String())
}

func TestSubscriberCapZeroAnswers503(t *testing.T) {
	f := newFixture(t, eventhub.WithMaxSubscribers(0))
	_, err := f.dialOpts(t, dialAs("a", wire.InterfaceMacOS, "alice"))
	assert.Equal(t, http.StatusServiceUnavailable, statusOf(err))
	_, err = f.dialOpts(t, eventhubtest.DialOptions{})
	assert.Equal(t, http.StatusServiceUnavailable, statusOf(err), "plain subscribers too")
}

func TestMissingInterfaceHeaderIs400(t *testing.T) {
	f := newFixture(t)
	_, err := f.dialOpts(t, eventhubtest.DialOptions{ClientID: "a"})
	assert.Equal(t, http.StatusBadRequest, statusOf(err))
	assert.Contains(t, err.Error(), wire.HeaderInterfaceID)
	_, err = f.dialOpts(t, eventhubtest.DialOptions{ClientID: "a", InterfaceID: "mac\tos"})
	assert.Equal(t, http.StatusBadRequest, statusOf(err), "control characters")
	_, err = f.dialOpts(t, eventhubtest.DialOptions{ClientID: strings.Repeat("a", 300), InterfaceID: "macos"})
	assert.Equal(t, http.StatusBadRequest, statusOf(err), "too long")
	assert.Empty(t, f.hub.Roster())

	req, _ := http.NewRequest(http.MethodPost, f.srv.EventsURL(), nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	http.DefaultClient.CloseIdleConnections()
}

func TestEventFrameShapeAndTargets(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	ext := f.dial(t, "ext", wire.InterfaceChromeExtension, "alice")
	mac := f.dial(t, "mac", wire.InterfaceMacOS, "bob")
	ui, err := f.dialOpts(t, eventhubtest.DialOptions{ConversationID: "conv-1"})
	require.NoError(t, err)

	id, err := f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "conv-1", map[string]any{"type": "host_browser_request"})
	require.NoError(t, err)
	fr, err := ext.Next(ctx)
	require.NoError(t, err)
	assert.Equal(t, wire.EventTypeAssistant, fr.Event)
	assert.Equal(t, id, fr.ID)
	env, err := fr.Envelope()
	require.NoError(t, err)
	assert.Equal(t, id, env.ID)
	assert.Equal(t, "conv-1", env.ConversationID)
	assert.Equal(t, t0, env.EmittedAt.UTC())
	assert.NotZero(t, env.Seq)
	assert.JSONEq(t, `{"type":"host_browser_request"}`, string(env.Message))

	// Capability host_browser reaches both; host_bash only the desktop.
	_, err = f.hub.Publish(ctx, eventhub.Target{Capability: eventhub.CapHostBash}, "", "bash")
	require.NoError(t, err)
	_, err = f.hub.Publish(ctx, eventhub.Target{Capability: eventhub.CapHostBrowser, ActorPrincipalID: "alice"}, "", "browser-alice")
	require.NoError(t, err)
	_, err = f.hub.Publish(ctx, eventhub.Target{ConversationID: "conv-2"}, "conv-2", "other-conv")
	require.NoError(t, err)
	_, err = f.hub.Publish(ctx, eventhub.Target{ConversationID: "conv-1"}, "conv-1", "conv")
	require.NoError(t, err)

	msgs := func(s *eventhubtest.Stream, n int) []string {
		var out []string
		for len(out) < n {
			env, err := s.NextEvent(ctx)
			require.NoError(t, err)
			var m string
			_ = json.Unmarshal(env.Message, &m)
			out = append(out, m)
		}
		return out
	}
	assert.Equal(t, []string{"browser-alice", "other-conv", "conv"}, msgs(ext, 3))
	assert.Equal(t, []string{"bash", "other-conv", "conv"}, msgs(mac, 3))
	assert.Equal(t, []string{"conv"}, msgs(ui, 1), "the conversation filter drops conv-2")
}

func TestLastEventIDDeliversRequestPublishedWhileReconnecting(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	s1 := f.dial(t, "ext", wire.InterfaceChromeExtension, "alice")
	_, err := f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "c", "first")
	require.NoError(t, err)
	_, err = s1.NextEvent(ctx)
	require.NoError(t, err)
	resume := s1.LastEventID
	require.NotEmpty(t, resume)

	// The client's side of the stream broke, the server has not noticed
	// yet: the request is published to the still-registered stream and
	// never read. The client reconnects with its Last-Event-ID.
	reqID, err := f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "c", "request-during-gap")
	require.NoError(t, err)
	o := dialAs("ext", wire.InterfaceChromeExtension, "alice")
	o.LastEventID = resume
	s2, err := f.dialOpts(t, o)
	require.NoError(t, err)
	env, err := s2.NextEvent(ctx)
	require.NoError(t, err)
	assert.Equal(t, reqID, env.ID, "the gap request is replayed first")
	assert.JSONEq(t, `"request-during-gap"`, string(env.Message))

	// Live events continue after the replay, in order, without duplicates.
	_, err = f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "c", "live")
	require.NoError(t, err)
	env, err = s2.NextEvent(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"live"`, string(env.Message))

	// Disconnect first, then reconnect: publishes in between fail at once
	// (HUB-1), events delivered before the disconnect but unread replay.
	resume = s2.LastEventID
	_, err = f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "c", "unread")
	require.NoError(t, err)
	gone := f.hub.Gone("ext")
	s2.Close()
	waitClosed(t, gone, "Gone")
	_, err = f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "c", "while-away")
	require.ErrorIs(t, err, eventhub.ErrNotConnected)
	o.LastEventID = resume
	s3, err := f.dialOpts(t, o)
	require.NoError(t, err)
	env, err = s3.NextEvent(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"unread"`, string(env.Message))

	// Another actor reusing the client id never gets alice's replay.
	f.hub.Unregister("ext")
	o2 := dialAs("ext", wire.InterfaceChromeExtension, "mallory")
	o2.LastEventID = resume
	s4, err := f.dialOpts(t, o2)
	require.NoError(t, err)
	_, err = f.hub.Publish(ctx, eventhub.Target{ClientID: "ext"}, "c", "for-mallory")
	require.NoError(t, err)
	env, err = s4.NextEvent(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `"for-mallory"`, string(env.Message), "no replay of another actor's events")

	// A malformed or foreign Last-Event-ID replays nothing and is not an error.
	o3 := dialAs("ext2", wire.InterfaceChromeExtension, "alice")
	for _, bad := range []string{"garbage", "0000ffff-1", "-1", strings.Repeat("9", 100)} {
		o3.LastEventID = bad
		s5, err := f.dialOpts(t, o3)
		require.NoError(t, err, bad)
		_, err = f.hub.Publish(ctx, eventhub.Target{ClientID: "ext2"}, "c", "fresh")
		require.NoError(t, err)
		env, err = s5.NextEvent(ctx)
		require.NoError(t, err)
		assert.JSONEq(t, `"fresh"`, string(env.Message), "nothing replayed for %q", bad)
	}
}

func TestPingAcknowledgesHeartbeatAndChecksActor(t *testing.T) {
	f := newFixture(t)
	ctx := testCtx(t)
	s := f.dial(t, "x", wire.InterfaceMacOS, "alice")
	tok := s.LastHeartbeat
	require.NotEmpty(t, tok)
	f.clock.Advance(5 * time.Second)

	code, err := eventhubtest.Ping(ctx, f.srv.PingURL(), "x", tok, eventhubtest.ActorHeader("mallory"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code, "another actor")
	code, _ = eventhubtest.Ping(ctx, f.srv.PingURL(), "x", "not-a-token", eventhubtest.ActorHeader("alice"))
	assert.Equal(t, http.StatusConflict, code, "unknown token")
	code, _ = eventhubtest.Ping(ctx, f.srv.PingURL(), "nobody", tok, eventhubtest.ActorHeader("alice"))
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = eventhubtest.Ping(ctx, f.srv.PingURL(), "", tok, eventhubtest.ActorHeader("alice"))
	assert.Equal(t, http.StatusBadRequest, code)
	info, _ := f.hub.Client("x")
	assert.Equal(t, t0, info.LastActive, "rejected pings do not count")

	code, _ = eventhubtest.Ping(ctx, f.srv.PingURL(), "x", tok, eventhubtest.ActorHeader("alice"))
	assert.Equal(t, http.StatusOK, code)
	info, _ = f.hub.Client("x")
	assert.Equal(t, t0.Add(5*time.Second), info.LastActive)

	// Oversized and malformed bodies.
	post := func(body string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.PingURL(), strings.NewReader(body))
		req.Header.Set(wire.HeaderClientID, "x")
		req.Header.Set(eventhubtest.TestActorHeader, "alice")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	defer http.DefaultClient.CloseIdleConnections()
	assert.Equal(t, http.StatusRequestEntityTooLarge, post(`{"heartbeat":"`+strings.Repeat("a", 8000)+`"}`))
	assert.Equal(t, http.StatusBadRequest, post(`{"heartbeat":`))
	assert.Equal(t, http.StatusBadRequest, post(`{}`))
	assert.Equal(t, http.StatusBadRequest, post(`{"heartbeat":"`+tok+`"} trailing`))
}

var _ = context.Background
