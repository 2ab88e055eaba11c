package mcptools_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image/png"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
)

// nodeRef returns the ref on the first snapshot line with role and the
// quoted name: the tree a model reads is the text content.
func nodeRef(t *testing.T, res *mcp.CallToolResult, role, name string) string {
	t.Helper()
	for line := range strings.Lines(text(res)) {
		if strings.Contains(line, role+` "`+name+`"`) {
			if m := refRE.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no %s %q in the snapshot:\n%s", role, name, text(res))
	return ""
}

var refRE = regexp.MustCompile(`\[ref=(e\d+)\]`)

// The SDK's client runs the tool scenario on the local backend: navigate →
// snapshot → type → click → wait_for → extract → links → screenshot, with
// progress notifications and MCP logging on the way.
func TestScenarioOverMCPOnLocal(t *testing.T) {
	s := startSite(t)
	tl, _ := localTools(t)

	progress := make(chan *mcp.ProgressNotificationParams, 64)
	logs := make(chan *mcp.LoggingMessageParams, 64)
	opts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
	}

	t.Run("image", func(t *testing.T) {
		_, ms := serve(t, mcptools.Options{Tools: tl})
		cs := connect(t, ms, opts)
		ctx := testCtx(t)
		require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))

		navParams := &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": s.URL + "/form"}}
		navParams.SetProgressToken("nav-1")
		res, err := cs.CallTool(ctx, navParams)
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
		var nav tools.NavigateResult
		decode(t, res, &nav)
		assert.Equal(t, s.URL+"/form", nav.URL)
		assert.Equal(t, "Contact", nav.Title)
		assert.Equal(t, browserbackend.KindLocal, nav.Backend)
		assert.Contains(t, text(res), "Loaded "+s.URL+"/form")
		p := <-progress // sent before the result, on the same session
		assert.Equal(t, "nav-1", p.ProgressToken)
		assert.Equal(t, "navigating to "+s.URL+"/form", p.Message)
		l := <-logs
		assert.Equal(t, mcp.LoggingLevel("info"), l.Level)
		assert.Equal(t, "browserchain", l.Logger)
		raw, err := json.Marshal(l.Data)
		require.NoError(t, err)
		assert.Contains(t, string(raw), `"msg":"browser tool done"`)
		assert.Contains(t, string(raw), `"tool":"browser_navigate"`)
		assert.Contains(t, string(raw), `"backend":"local"`)

		snap, res := ok[mcptools.SnapshotSummary](t, cs, "browser_snapshot", nil)
		field := nodeRef(t, res, "textbox", "Query")
		button := nodeRef(t, res, "button", "Send")
		assert.Equal(t, s.URL+"/form", snap.URL)
		assert.Equal(t, browserbackend.KindLocal, snap.Backend)
		assert.NotZero(t, snap.Nodes)
		assert.NotZero(t, snap.Refs)
		raw, err = json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "[ref=", "the tree is not sent twice")
		assert.Contains(t, text(res), `textbox "Query" [ref=`+field+`]`, "the text is the tree a model reads")

		typed, _ := ok[tools.ActionResult](t, cs, "browser_type", map[string]any{"ref": field, "text": "hello"})
		assert.Equal(t, field, typed.Ref)
		ok[tools.ActionResult](t, cs, "browser_click", map[string]any{"ref": button})

		waitParams := &mcp.CallToolParams{Name: "browser_wait_for", Arguments: map[string]any{"text": "Thanks, hello!"}}
		waitParams.SetProgressToken(7)
		res, err = cs.CallTool(ctx, waitParams)
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
		var w tools.WaitForResult
		decode(t, res, &w)
		assert.Equal(t, "text", w.Matched)
		assert.Contains(t, w.URL, "/done?q=hello")
		p = <-drainUntil(t, progress, func(p *mcp.ProgressNotificationParams) bool { return p.ProgressToken != "nav-1" })
		assert.EqualValues(t, 7, p.ProgressToken)
		assert.Equal(t, "waiting for text", p.Message)

		ex, res := ok[mcptools.ExtractSummary](t, cs, "browser_extract", nil)
		assert.Contains(t, text(res), "Thanks, hello!")
		assert.Equal(t, len([]rune(text(res))), ex.Chars)
		assert.Equal(t, s.URL+"/done?q=hello", ex.URL)
		raw, err = json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "Thanks", "the text is not sent twice")

		links, res := ok[tools.LinksResult](t, cs, "browser_links", map[string]any{"contains": "docs"})
		assert.Equal(t, []tools.Link{{Href: s.URL + "/docs/intro", Text: "Read the docs"}, {Href: s.URL + "/docs/api", Text: "API reference"}}, links.Links)
		assert.Contains(t, text(res), "- "+s.URL+"/docs/api API reference")

		shot, res := ok[tools.ScreenshotResult](t, cs, "browser_screenshot", nil)
		require.Len(t, res.Content, 2)
		img, isImage := res.Content[1].(*mcp.ImageContent)
		require.True(t, isImage, "the screenshot is image content")
		assert.Equal(t, "image/png", img.MIMEType)
		sum := sha256.Sum256(img.Data)
		assert.Equal(t, shot.SHA256, hex.EncodeToString(sum[:]), "the image is the file the result names")
		cfg, err := png.DecodeConfig(bytes.NewReader(img.Data))
		require.NoError(t, err)
		assert.Equal(t, shot.Width, cfg.Width)
		assert.Equal(t, shot.Height, cfg.Height)
		list, err := cs.ListResources(ctx, nil)
		require.NoError(t, err)
		require.Len(t, list.Resources, 1, "an inline screenshot is a resource of the session too")
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: list.Resources[0].URI})
		require.NoError(t, err)
		assert.Equal(t, img.Data, rr.Contents[0].Blob)

		st, res := ok[tools.StatusReport](t, cs, "browser_status", nil)
		lb, found := st.Backend(browserbackend.KindLocal)
		require.True(t, found)
		assert.True(t, lb.Available)
		assert.Contains(t, text(res), "- local: available")
	})

	t.Run("resource link", func(t *testing.T) {
		_, ms := serve(t, mcptools.Options{Tools: tl, Screenshots: mcptools.ScreenshotResourceLink})
		cs := connect(t, ms, nil)
		ok[tools.NavigateResult](t, cs, "browser_navigate", map[string]any{"url": s.URL + "/form"})
		shot, res := ok[tools.ScreenshotResult](t, cs, "browser_screenshot", map[string]any{"width": 320, "height": 200})
		require.Len(t, res.Content, 2)
		link, isLink := res.Content[1].(*mcp.ResourceLink)
		require.True(t, isLink, "the screenshot is a resource link")
		assert.True(t, strings.HasPrefix(link.URI, mcptools.ScreenshotURIPrefix), link.URI)
		require.NotNil(t, link.Size)
		assert.Equal(t, shot.Size, *link.Size)

		rr, err := cs.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: link.URI})
		require.NoError(t, err)
		require.Len(t, rr.Contents, 1)
		sum := sha256.Sum256(rr.Contents[0].Blob)
		assert.Equal(t, shot.SHA256, hex.EncodeToString(sum[:]))
		assert.Equal(t, 320, shot.Width)

		_, err = cs.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: mcptools.ScreenshotURIPrefix + "..%2F..%2Fetc%2Fpasswd"})
		require.Error(t, err, "only linked screenshots are served")

		list, err := cs.ListResources(testCtx(t), nil)
		require.NoError(t, err)
		require.Len(t, list.Resources, 1, "the session lists its screenshot")
		assert.Equal(t, link.URI, list.Resources[0].URI)
		assert.Equal(t, "image/png", list.Resources[0].MIMEType)
		assert.Equal(t, shot.Size, list.Resources[0].Size)

		other := connect(t, ms, nil)
		ok[tools.StatusReport](t, other, "browser_status", nil)
		list, err = other.ListResources(testCtx(t), nil)
		require.NoError(t, err)
		assert.Empty(t, list.Resources, "another session lists none of it")
		_, err = other.ReadResource(testCtx(t), &mcp.ReadResourceParams{URI: link.URI})
		require.Error(t, err, "nor reads it")
	})
}

func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out))
}

// drainUntil returns a channel holding the first value of ch that keep
// accepts (ch's earlier values are dropped).
func drainUntil[T any](t *testing.T, ch chan T, keep func(T) bool) chan T {
	t.Helper()
	out := make(chan T, 1)
	for v := range ch {
		if keep(v) {
			out <- v
			return out
		}
	}
	return out
}
