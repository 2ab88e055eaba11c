package extension_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/hostproxy"
)

type relayStats struct {
	Results           int `json:"results"`
	ResultsOverSocket int `json:"resultsOverSocket"`
	ResultsOverFetch  int `json:"resultsOverFetch"`
	SocketReady       int `json:"socketReady"`
	SocketFailures    int `json:"socketFailures"`
	SocketStreams     int `json:"socketStreams"`
	EventsOverSocket  int `json:"eventsOverSocket"`
	EventsOverFetch   int `json:"eventsOverFetch"`
	Suppressed        int `json:"suppressed"`
}

func (s *stack) relayStats(t *testing.T) relayStats {
	t.Helper()
	var st relayStats
	require.NoError(t, json.Unmarshal(s.workerEval(t, "vellum.stats"), &st))
	return st
}

func TestExtensionSendsResultsOverTheResultSocketOnceItIsReady(t *testing.T) {
	// A server whose socket carries results only: the extension keeps the
	// event stream and sends its results on the socket.
	s := startStack(t, stackOptions{resultsOnly: true})
	s.waitExtension(t)
	s.workerEval(t, "vellum.whenResultSocket(1)")
	c := s.rt.Selector.Client(s.invocation("conv-socket"))
	defer c.Close()
	var tabs struct{ Tabs []tab }
	send(t, c, "Vellum.listTabs", nil, &tabs) // the conversation's tab is opened first

	s.drainIDs()
	base := s.relayStats(t).Results
	send(t, c, "Vellum.listTabs", nil, &tabs)
	id := s.nextID(t)
	posts := s.waitPosts(t, id, 1)
	require.Len(t, posts, 1)
	assert.Equal(t, hostproxy.TransportWebSocket, posts[0].Transport, "the result came over the socket")
	assert.Equal(t, http.StatusOK, posts[0].Status)
	require.NotNil(t, posts[0].DurationMs, "the timings travel with a socket result too")

	// The server records the result before the extension reads its
	// acknowledgement (which is when it counts it): wait for the count.
	s.workerEval(t, fmt.Sprintf("vellum.whenResults(%d)", base+1))
	st := s.relayStats(t)
	assert.Equal(t, 1, st.SocketReady)
	assert.GreaterOrEqual(t, st.ResultsOverSocket, 1)
	assert.Zero(t, st.ResultsOverFetch, "no result needed a POST")
	assert.Zero(t, st.SocketStreams, "the socket offered no subscribed mode")
	assert.Positive(t, s.requests()["GET "+wire.PathEvents], "the commands came over the event stream")
}

func TestExtensionFallsBackToPostWhenTheServerHasNoResultSocket(t *testing.T) {
	tried := make(chan struct{})
	s := startStack(t, stackOptions{noSocket: true, socketTried: tried})
	s.waitExtension(t)
	waitClosed(t, tried, "the extension to try the result socket")
	c := s.rt.Selector.Client(s.invocation("conv-nosocket"))
	defer c.Close()
	var tabs struct{ Tabs []tab }
	send(t, c, "Vellum.listTabs", nil, &tabs) // the conversation's tab is opened first

	s.drainIDs()
	base := s.relayStats(t).Results
	send(t, c, "Vellum.listTabs", nil, &tabs)
	id := s.nextID(t)
	posts := s.waitPosts(t, id, 1)
	require.Len(t, posts, 1)
	assert.Equal(t, hostproxy.TransportHTTP, posts[0].Transport, "the result was POSTed")
	assert.Equal(t, http.StatusOK, posts[0].Status)

	send(t, c, "Vellum.listTabs", nil, &tabs)                      // and the next one too
	s.workerEval(t, fmt.Sprintf("vellum.whenResults(%d)", base+2)) // counted once the POST's answer is read
	st := s.relayStats(t)
	assert.Zero(t, st.SocketReady)
	assert.Zero(t, st.ResultsOverSocket)
	assert.Equal(t, base+2, st.ResultsOverFetch)
}
