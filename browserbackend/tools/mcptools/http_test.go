package mcptools_test

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
