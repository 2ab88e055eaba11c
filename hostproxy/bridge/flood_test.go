package bridge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server that pushes far more requests than MaxInFlight while its result
// route does not answer must not make the bridge open one goroutine and one
// connection per request: at most MaxInFlight refusals are posted at once,
// and the rest are dropped unanswered (the server's own timeout covers them)
// and reported through Hooks.RequestDone with OutcomeDropped.
func TestBridge_RequestFloodBeyondMaxInFlightKeepsRefusalsBounded(t *testing.T) {
	const maxInFlight, flood = 2, 40
	release := make(chan struct{})
	refusals := make(chan string, flood)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range flood {
				fmt.Fprintf(w, "event: assistant_event\nid: e-%d\ndata: {\"id\":\"e-%d\",\"seq\":%d,\"message\":"+
					"{\"type\":\"host_browser_request\",\"requestId\":\"r%d\",\"cdpMethod\":\"Block.forever\"}}\n\n", i, i, i+1, i)
			}
			w.(http.Flusher).Flush()
		case "/v1/host-browser-result":
			refusals <- r.URL.Path
		default:
			return
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()

	br := newFakeBrowser()
	br.started = make(chan string, flood)
	var mu sync.Mutex
	dropped := 0
	allDropped := make(chan struct{})
	b, err := New(Options{ServerURL: srv.URL, Dial: dialer(br), Logger: quiet(), MaxInFlight: maxInFlight,
		Hooks: Hooks{RequestDone: func(id, method, outcome string, isError bool) {
			if outcome != OutcomeDropped {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if dropped++; dropped == flood-2*maxInFlight {
				close(allDropped)
			}
		}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()

	for range maxInFlight {
		assert.Equal(t, "Block.forever", <-br.started)
		<-refusals
	}
	<-allDropped
	assert.Empty(t, refusals, "no refusal beyond the bound was posted")
	close(release)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	mu.Lock()
	assert.Equal(t, flood-2*maxInFlight, dropped)
	mu.Unlock()
}
