package mcptools_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// Over streamable HTTP the conversation is named after the Mcp-Session-Id,
// and the client ending its session (DELETE) closes the session's page.
func TestStreamableHTTPSessionOwnsItsPage(t *testing.T) {
	s := startSite(t)
	tl, b := localTools(t)
	ends, onEnd := endRecorder()
	_, ms := serve(t, mcptools.Options{Tools: tl, OnSessionEnd: onEnd})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	hs := chromiumtest.LoopbackServer(t, h)

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test"}, nil).Connect(testCtx(t),
		&mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, cs.ID(), "the server gave the session an id")
	nav, _ := ok[tools.NavigateResult](t, cs, "browser_navigate", map[string]any{"url": s.URL + "/over-http"})
	assert.Equal(t, "/over-http", nav.Title)
	assert.Equal(t, []string{"mcp-" + cs.ID()}, b.Conversations())

	require.NoError(t, cs.Close())
	assert.Equal(t, "mcp-"+cs.ID(), <-ends)
	assert.Empty(t, b.Conversations(), "the ended session's page is closed")
}

// sseEvent is one server-sent event as a client parses it.
type sseEvent struct {
	id, event, data, retry string
}

// readEvent reads the next event of an SSE stream (fields until a blank
// line); comment lines are skipped.
func readEvent(br *bufio.Reader) (sseEvent, error) {
	var e sseEvent
	var data []string
	seen := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return e, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !seen {
				continue
			}
			e.data = strings.Join(data, "\n")
			return e, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			e.id = value
		case "event":
			e.event = value
		case "data":
			data = append(data, value)
		case "retry":
			e.retry = value
		}
	}
}

// post sends one JSON-RPC message of session sid ("" before initialize).
func post(t *testing.T, url, sid, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// A client whose event stream drops in the middle of a tool call resumes it
// with Last-Event-ID and receives the result: every event has an id, the
// stream opens with a priming event that carries retry, and the events
// after the last one the client saw are replayed.
func TestDroppedEventStreamResumesWithLastEventID(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	blocked := make(chan struct{})
	prov := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal),
		NewBackend: func() *browserbackendtest.Backend {
			return browserbackendtest.NewBackend(browserbackend.KindLocal, func(ctx context.Context, _ browserbackend.Command) (json.RawMessage, error) {
				once.Do(func() { close(blocked) })
				select { // every command waits until the test lets it go
				case <-release:
					return json.RawMessage(`{}`), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			})
		}}
	log := browserbackendtest.DiscardLogger()
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: log})
	_, ms := serve(t, mcptools.Options{Tools: tools.New(tools.Options{Selector: sel, Logger: log})})
	hs := chromiumtest.LoopbackServer(t, mcptools.StreamableHTTPHandler(ms, nil))

	resp := post(t, hs.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	_, err := io.ReadAll(resp.Body) // the initialize result, before the initialized notification
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	resp = post(t, hs.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.NoError(t, resp.Body.Close())

	resp = post(t, hs.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"browser_snapshot","arguments":{}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
	prime, err := readEvent(bufio.NewReader(resp.Body))
	require.NoError(t, err)
	assert.NotEmpty(t, prime.id, "the priming event has an id")
	assert.Empty(t, prime.data, "and no data")
	assert.Equal(t, strconv.FormatInt(mcptools.DefaultSSERetry.Milliseconds(), 10), prime.retry, "and the reconnection delay")
	<-blocked
	require.NoError(t, resp.Body.Close()) // the stream drops while the call runs
	close(release)

	// A client reconnects after the retry the server sent. Until the server
	// has seen the old stream go it answers 409 (the stream is still
	// attached), and the client tries again after the same delay.
	ctx := testCtx(t)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL, nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Last-Event-ID", prime.id)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		if resp.StatusCode != http.StatusConflict {
			break
		}
		require.NoError(t, resp.Body.Close())
		select {
		case <-time.After(mcptools.DefaultSSERetry):
		case <-ctx.Done():
			require.NoError(t, ctx.Err(), "the old stream was never let go")
		}
	}
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	for {
		ev, err := readEvent(br)
		require.NoError(t, err, "the result arrives on the resumed stream")
		assert.NotEmpty(t, ev.id, "every event has an id")
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if ev.data == "" || json.Unmarshal([]byte(ev.data), &msg) != nil || msg.ID == nil {
			continue
		}
		assert.Equal(t, 2, *msg.ID)
		assert.NotEmpty(t, msg.Result, "the tool call's answer")
		return
	}
}
