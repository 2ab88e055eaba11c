package extension_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
)

// The routes the subscribed socket replaces: none of them may be used when
// the server offers it.
var sseAndPostRoutes = []string{
	"GET " + wire.PathEvents,
	"POST " + wire.PathPing,
	"POST " + wire.PathHostBrowserResult,
	"POST " + wire.PathHostBrowserEvent,
	"POST " + wire.PathHostBrowserSessionInvalidated,
}

// runRoundTripCancelAndEvents drives the extension through a command round
// trip, CDP events (openPage waits for the navigation's events), a
// cancelled command whose result the extension must drop, and a last
// result; it returns how many commands were answered.
func runRoundTripCancelAndEvents(t *testing.T, s *stack, conv string) (answered int) {
	t.Helper()
	fx := startFixtures(t)
	c := s.rt.Selector.Client(s.invocation(conv))
	defer c.Close()

	var tabs struct{ Tabs []tab }
	send(t, c, wire.MethodListTabs, nil, &tabs) // a round trip
	openPage(t, c, fx.page(conv))               // createTab, Page.enable, Page.navigate, and their events
	answered = 4

	s.drainIDs()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := sendAsync(ctx, c, "Runtime.evaluate", fx.gatedEval(conv, 1))
	cancelled := s.nextID(t)
	g := fx.gate(conv)
	waitClosed(t, g.started, "the page to start the command")
	cancel()
	assert.ErrorIs(t, waitResult(t, res).err, browserbackend.ErrAborted)
	close(g.release)
	suppressed := s.workerEval(t, fmt.Sprintf("vellum.whenSuppressed(%q)", cancelled))
	assert.JSONEq(t, "true", string(suppressed), "the extension dropped the cancelled command's result")

	var ev struct{ Result struct{ Value int } }
	send(t, c, "Runtime.evaluate", map[string]any{"expression": "6*7", "returnByValue": true}, &ev)
	assert.Equal(t, 42, ev.Result.Value)
	answered++
	assert.Empty(t, s.resultsFor(cancelled), "no result was sent for the cancelled command")
	return answered
}

func TestLocalMode_OneWebSocketCarriesRequestsCancelsResultsAndEvents(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.waitExtension(t)
	answered := runRoundTripCancelAndEvents(t, s, "conv-one-socket")

	s.workerEval(t, fmt.Sprintf("vellum.whenResults(%d)", answered))
	results := s.allResults()
	require.GreaterOrEqual(t, len(results), answered)
	for _, r := range results {
		assert.Equal(t, hostproxy.TransportWebSocket, r.Transport, "%s came over the socket", r.RequestID)
	}
	got := s.requests()
	for _, route := range sseAndPostRoutes {
		assert.Zero(t, got[route], "the server received %s", route)
	}
	assert.Equal(t, 1, got["GET "+wire.PathHostBrowserResultSocket], "one WebSocket for the whole session")
	st := s.relayStats(t)
	assert.Equal(t, 1, st.SocketStreams)
	assert.Positive(t, st.EventsOverSocket, "the navigation's events went over the socket")
	assert.Zero(t, st.EventsOverFetch)
	assert.Zero(t, st.ResultsOverFetch)
}

func TestLocalMode_ServerWithoutTheSocketGetsSSEAndPOST(t *testing.T) {
	s := startStack(t, stackOptions{noSocket: true})
	s.waitExtension(t)
	answered := runRoundTripCancelAndEvents(t, s, "conv-no-socket")

	s.workerEval(t, fmt.Sprintf("vellum.whenResults(%d)", answered))
	results := s.allResults()
	require.GreaterOrEqual(t, len(results), answered)
	for _, r := range results {
		assert.Equal(t, hostproxy.TransportHTTP, r.Transport, "%s was POSTed", r.RequestID)
	}
	got := s.requests()
	assert.Positive(t, got["GET "+wire.PathEvents], "the commands came over the event stream")
	assert.Positive(t, got["POST "+wire.PathHostBrowserEvent], "the events were POSTed")
	st := s.relayStats(t)
	assert.Zero(t, st.SocketStreams)
	assert.Zero(t, st.SocketReady)
	assert.Zero(t, st.EventsOverSocket)
	assert.Positive(t, st.EventsOverFetch)
	assert.GreaterOrEqual(t, st.ResultsOverFetch, answered)
}
