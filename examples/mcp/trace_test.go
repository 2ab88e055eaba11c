//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -trace-dir records the session's calls: browser_trace shows them, and the
// session's end writes its conversation's trace files.
func TestTraceDirWritesTheConversationsTraceWhenItsSessionEnds(t *testing.T) {
	s := startSite(t)
	dir := filepath.Join(t.TempDir(), "traces")
	cs, _ := startServer(t, "-trace-dir", dir)
	res := callTool(t, cs, "browser_navigate", map[string]any{"url": s.URL + "/form"})
	require.False(t, res.IsError, resultText(res))
	res = callTool(t, cs, "browser_type", map[string]any{"selector": "#q", "text": "typed-never-kept"})
	require.False(t, res.IsError, resultText(res))
	res = callTool(t, cs, "browser_trace", nil)
	require.False(t, res.IsError, resultText(res))
	assert.Contains(t, resultText(res), "#1 navigate → local: ok")
	assert.Contains(t, resultText(res), "#2 type → local: ok")
	res = callTool(t, cs, "browser_trace", map[string]any{"format": "html"})
	require.False(t, res.IsError, resultText(res))
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	require.NotNil(t, link)
	page, err := cs.ReadResource(procCtx(t), &mcp.ReadResourceParams{URI: link.URI})
	require.NoError(t, err)
	assert.Contains(t, page.Contents[0].Text, `data-method="Page.navigate"`)
	require.NoError(t, cs.Close()) // the process exits once the session's trace is written

	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
		raw, err := os.ReadFile(filepath.Join(dir, f.Name()))
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "typed-never-kept")
		if strings.HasSuffix(f.Name(), ".jsonl") {
			assert.Contains(t, string(raw), `"op":"navigate"`)
		}
	}
	require.Len(t, names, 2, names)
	assert.True(t, strings.HasPrefix(names[0], "mcp-"), names)
}
