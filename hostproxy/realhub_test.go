package hostproxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/eventhub/eventhubtest"
	"github.com/browserchain/browserchain/hostproxy"
)

// These tests run the proxy on the real in-process hub over HTTP, with raw
// SSE test clients standing in for the extension and the bridge.

type realWorld struct {
	srv   *eventhubtest.Server
	proxy *hostproxy.Proxy
}

func newRealWorld(t *testing.T) *realWorld {
	hub := eventhub.New(eventhub.WithLogger(slog.New(slog.DiscardHandler)))
	w := &realWorld{proxy: hostproxy.New(hostproxy.Options{Hub: hub, Logger: slog.New(slog.DiscardHandler)})}
	w.srv = eventhubtest.NewServer(t, hub, w.proxy.Mount)
	t.Cleanup(func() { _ = w.proxy.Close() })
	return w
}

func (w *realWorld) dial(t *testing.T, clientID, iface, actor string) *eventhubtest.Stream {
	s, err := eventhubtest.Dial(context.Background(), w.srv.EventsURL(), eventhubtest.DialOptions{
		ClientID: clientID, InterfaceID: iface, Header: eventhubtest.ActorHeader(actor)})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// nextMessage returns the next hub message on s, skipping heartbeats.
func nextMessage(t *testing.T, s *eventhubtest.Stream) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := s.NextEvent(ctx)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(env.Message, &m))
	return m
}

func TestRealHub_TargetStreamClosesMidRequestFailsAtOnce(t *testing.T) {
	w := newRealWorld(t)
	s := w.dial(t, "mac-1", wire.InterfaceMacOS, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		// The request's own timeout is far away: only the disconnect can end it.
		_, err := w.proxy.Request(ctx, hostproxy.Req{Method: "Page.navigate", SourceActor: "alice", Timeout: time.Hour})
		errc <- err
	}()
	req := nextMessage(t, s)
	require.Equal(t, wire.TypeHostBrowserRequest, req["type"])
	s.Close() // the client's stream goes away mid-request
	err := <-errc
	assert.ErrorIs(t, err, browserbackend.ErrTransport)
	assert.NotErrorIs(t, err, browserbackend.ErrTimeout)
	assert.Empty(t, w.proxy.Interactions().List(nil))
}

func TestRealHub_CancelGoesToTheTargetOnly(t *testing.T) {
	w := newRealWorld(t)
	target := w.dial(t, "ext-1", wire.InterfaceChromeExtension, "alice")
	other := w.dial(t, "mac-1", wire.InterfaceMacOS, "alice")
	bob := w.dial(t, "ext-bob", wire.InterfaceChromeExtension, "bob")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := w.proxy.Request(ctx, hostproxy.Req{Method: "Page.navigate", SourceActor: "alice"})
		errc <- err
	}()
	req := nextMessage(t, target)
	cancel()
	assert.ErrorIs(t, <-errc, browserbackend.ErrAborted)
	assert.Equal(t, map[string]any{"type": wire.TypeHostBrowserCancel, "requestId": req["requestId"]}, nextMessage(t, target))

	// A marker published to everyone after the cancel is the first thing the
	// others see: they got neither the request nor the cancel.
	_, err := w.srv.Hub.Publish(context.Background(), eventhub.Target{Capability: eventhub.CapHostBrowser}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	assert.Equal(t, "marker", nextMessage(t, other)["type"])
	assert.Equal(t, "marker", nextMessage(t, bob)["type"])
}

func TestRealHub_ResultRouteOverHTTP(t *testing.T) {
	w := newRealWorld(t)
	s := w.dial(t, "ext-1", wire.InterfaceChromeExtension, "alice")
	resc := make(chan json.RawMessage, 1)
	go func() {
		res, err := w.proxy.Request(context.Background(), hostproxy.Req{Method: "Runtime.evaluate"})
		assert.NoError(t, err)
		resc <- res
	}()
	req := nextMessage(t, s)
	post := func(clientID, actor string) int {
		body, _ := json.Marshal(hostproxy.ResultBody{RequestID: req["requestId"].(string), Content: `{"v":1}`})
		r, _ := http.NewRequest(http.MethodPost, w.srv.URL+wire.PathHostBrowserResult, bytes.NewReader(body))
		r.Header.Set(wire.HeaderClientID, clientID)
		r.Header.Set(eventhubtest.TestActorHeader, actor)
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, post("ext-1", "mallory"))
	assert.Equal(t, http.StatusOK, post("ext-1", "alice"))
	assert.JSONEq(t, `{"v":1}`, string(<-resc))
	assert.Equal(t, http.StatusNotFound, post("ext-1", "alice"))
}

// Two Proxy values on one hub (say two host apps' modules, each serving its
// own result route) each publish, retract and receive only their own
// requests: a reconnect's replay brings every request whose caller still
// waits, from both proxies, and none whose caller has finished; a result
// reaches only the proxy that sent the request. Real in-process hub, real
// HTTP routes on loopback, a raw SSE client standing in for the extension.
func TestTwoProxiesShareOneHubAndReplayOnlyTheirOwnPending(t *testing.T) {
	discard := slog.New(slog.DiscardHandler)
	hub := eventhub.New(eventhub.WithLogger(discard))
	pa := hostproxy.New(hostproxy.Options{Hub: hub, Logger: discard})
	pb := hostproxy.New(hostproxy.Options{Hub: hub, Logger: discard})
	t.Cleanup(func() { _ = pa.Close(); _ = pb.Close() })
	srvA := eventhubtest.NewServer(t, hub, pa.Mount)
	srvB := eventhubtest.NewServer(t, hub, pb.Mount)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a broken test only
	defer cancel()

	dial := func(lastEventID string) *eventhubtest.Stream {
		s, err := eventhubtest.Dial(ctx, srvA.EventsURL(), eventhubtest.DialOptions{ClientID: "ext-1",
			InterfaceID: wire.InterfaceChromeExtension, LastEventID: lastEventID, Header: eventhubtest.ActorHeader("alice")})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		_, _, err = s.NextHeartbeat(ctx) // registered once the first heartbeat is read
		require.NoError(t, err)
		return s
	}
	post := func(srv *eventhubtest.Server, requestID string) int {
		body, _ := json.Marshal(hostproxy.ResultBody{RequestID: requestID, Content: `{"ok":true}`})
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+wire.PathHostBrowserResult, bytes.NewReader(body))
		r.Header.Set(wire.HeaderClientID, "ext-1")
		r.Header.Set(eventhubtest.TestActorHeader, "alice")
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	type outcome struct {
		res json.RawMessage
		err error
	}
	start := func(p *hostproxy.Proxy, rctx context.Context, method string) <-chan outcome {
		done := make(chan outcome, 1)
		go func() {
			res, err := p.Request(rctx, hostproxy.Req{Method: method, TargetClientID: "ext-1", SourceActor: "alice", Timeout: time.Hour})
			done <- outcome{res, err}
		}()
		return done
	}

	s1 := dial("")
	_, err := hub.Publish(ctx, eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "marker"})
	require.NoError(t, err)
	require.Equal(t, "marker", nextMessage(t, s1)["type"])
	resume := s1.LastEventID

	// Still waiting: one request from each proxy.
	waitA := start(pa, ctx, "Page.navigate")
	reqA := nextMessage(t, s1)
	waitB := start(pb, ctx, "Runtime.evaluate")
	reqB := nextMessage(t, s1)
	// Finished: B's answered request, and A's request whose caller gave up.
	answeredB := start(pb, ctx, "Page.reload")
	doneB := nextMessage(t, s1)
	require.Equal(t, http.StatusNotFound, post(srvA, doneB["requestId"].(string)), "A has no caller for B's request")
	require.Equal(t, http.StatusOK, post(srvB, doneB["requestId"].(string)))
	require.NoError(t, (<-answeredB).err)
	giveUp, stop := context.WithCancel(ctx)
	abortedA := start(pa, giveUp, "Input.dispatchKeyEvent")
	gaveUp := nextMessage(t, s1)
	stop()
	require.ErrorIs(t, (<-abortedA).err, browserbackend.ErrAborted)
	require.Equal(t, wire.TypeHostBrowserCancel, nextMessage(t, s1)["type"])

	// The client reconnects as if it had read nothing after the marker.
	s2 := dial(resume)
	_, err = hub.Publish(ctx, eventhub.Target{ClientID: "ext-1"}, "", map[string]string{"type": "after"})
	require.NoError(t, err)
	var replay []string
	for {
		m := nextMessage(t, s2)
		if m["type"] == "after" {
			break
		}
		replay = append(replay, m["type"].(string)+" "+m["requestId"].(string))
	}
	assert.Equal(t, []string{
		wire.TypeHostBrowserRequest + " " + reqA["requestId"].(string),
		wire.TypeHostBrowserRequest + " " + reqB["requestId"].(string),
		wire.TypeHostBrowserCancel + " " + gaveUp["requestId"].(string),
	}, replay, "both proxies' waiting requests, neither finished one")

	// Each result reaches only the proxy that sent the request; a post to
	// the other one is refused and consumes nothing.
	assert.Equal(t, http.StatusNotFound, post(srvB, reqA["requestId"].(string)))
	assert.Equal(t, http.StatusOK, post(srvA, reqA["requestId"].(string)))
	assert.Equal(t, http.StatusOK, post(srvB, reqB["requestId"].(string)))
	for _, w := range []<-chan outcome{waitA, waitB} {
		out := <-w
		require.NoError(t, out.err)
		assert.JSONEq(t, `{"ok":true}`, string(out.res))
	}
	assert.Empty(t, pa.Interactions().List(nil))
	assert.Empty(t, pb.Interactions().List(nil))
}
