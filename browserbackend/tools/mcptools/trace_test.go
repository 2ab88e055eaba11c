package mcptools_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
)

func TestBrowserTraceIsOnlyThereWhenTheToolsRecord(t *testing.T) {
	tl, _ := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)
	list, err := cs.ListTools(testCtx(t), nil)
	require.NoError(t, err)
	assert.False(t, slices.ContainsFunc(list.Tools, func(tool *mcp.Tool) bool { return tool.Name == "browser_trace" }))
}

func TestBrowserTraceShowsTheConversationsCallsAndFailover(t *testing.T) {
	log := browserbackendtest.DiscardLogger()
	gone := &browserbackend.Error{Class: browserbackend.ClassTransport, Code: browserbackend.CodeNoClient, Message: "extension gone"}
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: log, Providers: []browserbackend.Provider{
		&browserbackendtest.Provider{K: browserbackend.KindExtension, Desc: refDesc(browserbackend.KindExtension), BuildErr: gone},
		&browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)},
	}})
	rec := recorder.New(recorder.Options{})
	tl := tools.New(tools.Options{Selector: sel, Logger: log, Recorder: rec})
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)

	call(t, cs, "browser_scroll", map[string]any{"conversation_id": "c1"})
	got, res := ok[mcptools.TraceResult](t, cs, "browser_trace", map[string]any{"conversation_id": "c1"})
	assert.Equal(t, "c1", got.Conversation)
	assert.Equal(t, uint64(1), got.Stats.Calls)
	var failover bool
	for _, e := range got.Entries {
		failover = failover || (e.Failover && e.Backend == "extension")
	}
	assert.True(t, failover, "%+v", got.Entries)
	assert.Contains(t, text(res), "#1 scroll → local")
	assert.Contains(t, text(res), "failover: extension failed (no_client)")

	got, res = ok[mcptools.TraceResult](t, cs, "browser_trace", map[string]any{"conversation_id": "c1", "format": "html"})
	assert.Empty(t, got.Entries)
	require.Equal(t, mcptools.TraceURIPrefix+"c1", got.HTML)
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	require.NotNil(t, link)
	page, err := cs.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: link.URI})
	require.NoError(t, err)
	require.Len(t, page.Contents, 1)
	assert.Equal(t, "text/html", page.Contents[0].MIMEType)
	assert.True(t, strings.Contains(page.Contents[0].Text, `data-failover="extension"`))

	_, err = cs.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: mcptools.TraceURIPrefix + "nobody"})
	require.Error(t, err)
	bad := call(t, cs, "browser_trace", map[string]any{"conversation_id": "c1", "format": "pdf"})
	assert.True(t, bad.IsError)
}
