//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
	"github.com/browserchain/browserchain/internal/proctest"
)

// inspectorVersion is the MCP Inspector scripts/setup.sh installs.
const inspectorVersion = "1.0.3"

// inspector returns the MCP Inspector binary: $BROWSERCHAIN_MCP_INSPECTOR,
// else where scripts/setup.sh installs it.
func inspector(t *testing.T) string {
	if p := os.Getenv("BROWSERCHAIN_MCP_INSPECTOR"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	p := filepath.Join(home, ".cache", "browserchain", "mcp-inspector", inspectorVersion, "node_modules", ".bin", "mcp-inspector")
	_, err = os.Stat(p)
	require.NoError(t, err, "the MCP Inspector CLI is missing: run scripts/setup.sh")
	return p
}

// toolResult is the part of a tools/call answer the tests read.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

// runInspector runs the Inspector CLI with args and decodes its JSON answer.
func runInspector(t *testing.T, args []string, out any) {
	t.Helper()
	cmd := diesWithTest(exec.CommandContext(procCtx(t), inspector(t), append([]string{"--cli"}, args...)...))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "inspector %q: %s", args, stderr.String())
	require.NoError(t, json.Unmarshal(stdout.Bytes(), out), "inspector output: %s", stdout.String())
}

// toolList is the part of a tools/list answer the tests read.
type toolList struct {
	Tools []map[string]any `json:"tools"`
}

func toolNames(t *testing.T, list toolList) []string {
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool["name"].(string))
		assert.Contains(t, tool["inputSchema"].(map[string]any)["properties"], "browser_mode")
	}
	return names
}

func TestInspectorCLIOverStdio(t *testing.T) {
	s := startSite(t)
	dir := t.TempDir()
	mark := newMark(t)
	server := append([]string{"-e", markEnv + "=" + mark, binary}, serverArgs(dir)...)

	var list toolList
	runInspector(t, append(server, "--method", "tools/list"), &list)
	assert.ElementsMatch(t, mcptools.ToolNames, toolNames(t, list))

	var nav toolResult
	runInspector(t, append(server, "--method", "tools/call", "--tool-name", "browser_navigate", "--tool-arg", "url="+s.URL+"/form"), &nav)
	require.False(t, nav.IsError, "%+v", nav)
	assert.Equal(t, s.URL+"/form", nav.StructuredContent["url"])
	assert.Equal(t, "Contact", nav.StructuredContent["title"])
	assert.Equal(t, "local", nav.StructuredContent["backend"])

	// Each CLI call is its own server process: the snapshot is of a new page.
	var snap toolResult
	runInspector(t, append(server, "--method", "tools/call", "--tool-name", "browser_snapshot"), &snap)
	require.False(t, snap.IsError, "%+v", snap)
	require.NotEmpty(t, snap.Content)
	assert.Contains(t, snap.Content[0].Text, "Page about:blank")
	assert.Equal(t, "local", snap.StructuredContent["backend"])

	assert.Empty(t, marked(t, mark), "no server, driver or Chromium process outlives its client")
}

var listening = regexp.MustCompile(`serving MCP over streamable HTTP.*url=(http://\S+)`)

func TestInspectorCLIOverStreamableHTTP(t *testing.T) {
	s := startSite(t)
	dir := t.TempDir()
	mark := newMark(t)
	cmd := diesWithTest(exec.Command(binary, append(serverArgs(dir), "-http", "127.0.0.1:0")...))
	cmd.Env = append(os.Environ(), markEnv+"="+mark)
	url, exited := proctest.StartServing(t, procCtx(t), cmd, nil, listening)
	server := []string{url, "--transport", "http"}

	var list toolList
	runInspector(t, append(server, "--method", "tools/list"), &list)
	assert.ElementsMatch(t, mcptools.ToolNames, toolNames(t, list))

	// One server, one CLI session per call: a named conversation carries
	// the page from the navigate to the snapshot.
	var nav toolResult
	runInspector(t, append(server, "--method", "tools/call", "--tool-name", "browser_navigate",
		"--tool-arg", "url="+s.URL+"/form", "--tool-arg", "conversation_id=inspector"), &nav)
	require.False(t, nav.IsError, "%+v", nav)
	assert.Equal(t, "Contact", nav.StructuredContent["title"])

	var snap toolResult
	runInspector(t, append(server, "--method", "tools/call", "--tool-name", "browser_snapshot",
		"--tool-arg", "conversation_id=inspector"), &snap)
	require.False(t, snap.IsError, "%+v", snap)
	require.NotEmpty(t, snap.Content)
	assert.Contains(t, snap.Content[0].Text, `Page `+s.URL+`/form — "Contact"`)
	assert.Contains(t, snap.Content[0].Text, `textbox "Query"`)

	var bad toolResult
	runInspector(t, append(server, "--method", "tools/call", "--tool-name", "browser_snapshot",
		"--tool-arg", "browser_mode=chrome"), &bad)
	assert.True(t, bad.IsError)
	require.NotEmpty(t, bad.Content)
	assert.Contains(t, bad.Content[0].Text, "browser_mode")
	assert.Contains(t, bad.Content[0].Text, "auto extension cdp-inspect cdp-debugger local playwright", "the schema's values")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-exited, "SIGTERM is a clean exit")
	exited <- nil
	assert.Empty(t, marked(t, mark), "no driver or Chromium process outlives the server")
}
