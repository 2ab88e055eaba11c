package mcptools_test

import (
	"slices"
	"strconv"
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

func TestATraceIsReadOnlyByTheSessionsThatUsedItsConversation(t *testing.T) {
	tl, _ := fakeChain()
	rec := recorder.New(recorder.Options{})
	tl = tools.New(tools.Options{Selector: tl.Selector(), Logger: browserbackendtest.DiscardLogger(), Recorder: rec})
	_, ms := serve(t, mcptools.Options{Tools: tl})
	owner, other := connect(t, ms, nil), connect(t, ms, nil)

	// The owner's own conversation (no conversation_id) and a named one.
	call(t, owner, "browser_scroll", map[string]any{})
	call(t, owner, "browser_scroll", map[string]any{"conversation_id": "shared"})
	own, _ := ok[mcptools.TraceResult](t, owner, "browser_trace", map[string]any{"format": "html"})
	require.NotEmpty(t, own.HTML)
	named, _ := ok[mcptools.TraceResult](t, owner, "browser_trace", map[string]any{"conversation_id": "shared"})
	assert.Equal(t, uint64(1), named.Stats.Calls)

	// Another session reads neither: not by naming the conversation, not
	// by the owner's link, and lists no trace among its resources.
	for _, conv := range []string{own.Conversation, "shared"} {
		res := call(t, other, "browser_trace", map[string]any{"conversation_id": conv})
		assert.True(t, res.IsError, conv)
		assert.Contains(t, text(res), "not of "+strconv.Quote(conv))
	}
	_, err := other.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: own.HTML})
	require.Error(t, err)
	list, err := other.ListResources(testCtx(t), nil)
	require.NoError(t, err)
	assert.Empty(t, list.Resources)

	// The owner reads its link, and lists it.
	page, err := owner.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: own.HTML})
	require.NoError(t, err)
	assert.Contains(t, page.Contents[0].Text, "<html")
	list, err = owner.ListResources(testCtx(t), nil)
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(list.Resources, func(r *mcp.Resource) bool { return r.URI == own.HTML }))

	// A session that acts in the shared conversation may read its trace.
	call(t, other, "browser_scroll", map[string]any{"conversation_id": "shared"})
	shared, _ := ok[mcptools.TraceResult](t, other, "browser_trace", map[string]any{"conversation_id": "shared"})
	assert.Equal(t, uint64(2), shared.Stats.Calls)
}
