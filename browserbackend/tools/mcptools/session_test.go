package mcptools_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
)

// endRecorder returns OnSessionEnd recording into a channel.
func endRecorder() (chan string, func(string)) {
	ch := make(chan string, 8)
	return ch, func(conv string) { ch <- conv }
}

func TestTwoSessionsKeepTheirOwnConversations(t *testing.T) {
	s := startSite(t)
	tl, b := localTools(t)
	ends, onEnd := endRecorder()
	srv, ms := serve(t, mcptools.Options{Tools: tl, OnSessionEnd: onEnd})
	a, c := connect(t, ms, nil), connect(t, ms, nil)

	ok[tools.NavigateResult](t, a, "browser_navigate", map[string]any{"url": s.URL + "/page-a"})
	ok[tools.NavigateResult](t, c, "browser_navigate", map[string]any{"url": s.URL + "/page-b"})
	snapA, _ := ok[mcptools.SnapshotSummary](t, a, "browser_snapshot", nil)
	snapC, _ := ok[mcptools.SnapshotSummary](t, c, "browser_snapshot", nil)
	assert.Equal(t, s.URL+"/page-a", snapA.URL, "session a still sees its own page")
	assert.Equal(t, s.URL+"/page-b", snapC.URL, "session c has a page of its own")

	convs := b.Conversations()
	require.Len(t, convs, 2, "one local page per session")
	for _, conv := range convs {
		assert.True(t, strings.HasPrefix(conv, "mcp-"), conv)
	}
	assert.ElementsMatch(t, convs, srv.Conversations())

	// A conversation the client names is shared by the sessions naming it.
	ok[tools.NavigateResult](t, a, "browser_navigate", map[string]any{"url": s.URL + "/shared", "conversation_id": "shared"})
	shared, _ := ok[mcptools.ExtractSummary](t, c, "browser_extract", map[string]any{"conversation_id": "shared"})
	assert.Equal(t, s.URL+"/shared", shared.URL)
	assert.Len(t, b.Conversations(), 3)

	// Session a ends: its own page closes; the named one stays.
	require.NoError(t, a.Close())
	endA := <-ends
	assert.NotContains(t, b.Conversations(), endA)
	assert.Contains(t, b.Conversations(), "shared")
	snapC, _ = ok[mcptools.SnapshotSummary](t, c, "browser_snapshot", nil)
	assert.Equal(t, s.URL+"/page-b", snapC.URL)
	shared, _ = ok[mcptools.ExtractSummary](t, c, "browser_extract", map[string]any{"conversation_id": "shared"})
	assert.Equal(t, s.URL+"/shared", shared.URL, "a named conversation outlives the session that opened it")

	require.NoError(t, c.Close())
	endC := <-ends
	assert.NotEqual(t, endA, endC)
	assert.Equal(t, []string{"shared"}, b.Conversations(), "only the named conversation is left")
	assert.Equal(t, []string{"shared"}, srv.Conversations())
	require.NoError(t, srv.Close())
	assert.Empty(t, b.Conversations(), "Close closes the named conversations: no page is left behind")
}

func TestClientDisconnectingMidToolLeavesNoPageBehind(t *testing.T) {
	s := startSite(t)
	tl, b := localTools(t)
	ends, onEnd := endRecorder()
	_, ms := serve(t, mcptools.Options{Tools: tl, OnSessionEnd: onEnd})

	// The client talks over two pipes, as a stdio client process would;
	// closing them is the client going away without a goodbye.
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ctx := testCtx(t)
	_, err := ms.Connect(ctx, &mcp.IOTransport{Reader: toServer, Writer: fromServer}, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "vanishing"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	require.NoError(t, err)

	callCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": s.URL + "/slow"}})
		errc <- err
	}()
	<-s.slowHit // the browser is loading the page: the tool is in flight
	require.Len(t, b.Conversations(), 1)

	require.NoError(t, fromClient.Close()) // the server reads EOF
	require.NoError(t, toClient.Close())
	<-ends
	assert.Empty(t, b.Conversations(), "the session's page was closed")

	cancel()
	require.Error(t, <-errc, "the client's call ends with its connection")
	_ = cs.Close()
}

// A Server closed with live sessions ends them and releases their pages.
func TestCloseEndsLiveSessions(t *testing.T) {
	s := startSite(t)
	tl, b := localTools(t)
	srv := mcptools.New(mcptools.Options{Tools: tl, Logger: discard()})
	cs := connect(t, srv.NewMCPServer(nil), nil)
	ok[tools.NavigateResult](t, cs, "browser_navigate", map[string]any{"url": s.URL + "/x"})
	require.Len(t, b.Conversations(), 1)
	require.NoError(t, srv.Close())
	assert.Empty(t, b.Conversations())
	require.NoError(t, srv.Close(), "Close is idempotent")
}

func discard() *slog.Logger { return browserbackendtest.DiscardLogger() }

// Close cancels the tool calls in flight instead of waiting for their
// deadline (here the longest a call may have): a navigate to a page that
// never answers ends at once, as an error, and its page is closed.
func TestCloseCancelsCallsInFlight(t *testing.T) {
	s := startSite(t)
	tl, b := localTools(t)
	srv := mcptools.New(mcptools.Options{Tools: tl, Logger: discard()})
	cs := connect(t, srv.NewMCPServer(nil), nil)

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	calls := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "browser_navigate",
			Arguments: map[string]any{"url": s.URL + "/slow", "timeout_ms": tools.MaxTimeout.Milliseconds()}})
		calls <- outcome{res, err}
	}()
	<-s.slowHit // the browser is loading the page: the call is in flight

	require.NoError(t, srv.Close())
	o := <-calls
	if o.err == nil {
		require.True(t, o.res.IsError, "the cancelled call is a tool error")
		t.Logf("the cancelled call: %s", text(o.res))
	}
	assert.Empty(t, b.Conversations(), "the session's page was closed")
}
