//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/browserchain/browserchain/internal/logtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServer runs the built server with args over the SDK's command
// transport and returns the session and the process's stderr.
func startServer(t *testing.T, args ...string) (*mcp.ClientSession, *logtest.Buffer) {
	t.Helper()
	dir := t.TempDir()
	cmd := diesWithTest(exec.Command(binary, append(append(serverArgs(dir), "-v"), args...)...))
	var stderr logtest.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "guard-test"}, nil).Connect(procCtx(t), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, &stderr
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(procCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b bytes.Buffer
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// -vault gives browser_login its credentials: the form posted to the site
// carries the password, and nothing the client receives nor the server's
// debug log on stderr holds it.
func TestVaultFlagServesLoginWithoutShowingThePassword(t *testing.T) {
	const secret = "vault-pw-Zr81-horse"
	s := startSite(t)
	vaultFile := filepath.Join(t.TempDir(), "vault.json")
	require.NoError(t, os.WriteFile(vaultFile, []byte(`{"login:site": {"username": "ada", "password": "`+secret+`"}}`), 0o600))
	cs, stderr := startServer(t, "-vault", vaultFile)

	var seen []string
	run := func(name string, args map[string]any) *mcp.CallToolResult {
		res := callTool(t, cs, name, args)
		raw, err := json.Marshal(res)
		require.NoError(t, err)
		seen = append(seen, string(raw))
		return res
	}
	res := run("browser_navigate", map[string]any{"url": s.URL + "/login"})
	require.False(t, res.IsError, resultText(res))
	fields := []map[string]any{{"selector": "#u", "value": "%username%"}, {"selector": "#p", "value": "%password%"}}
	res = run("browser_login", map[string]any{"credential": "login:nope", "fields": fields})
	require.True(t, res.IsError)
	res = run("browser_login", map[string]any{"credential": "login:site", "fields": fields, "submit": map[string]any{"selector": "#signin"}})
	require.False(t, res.IsError, resultText(res))
	assert.Equal(t, secret, <-s.posted)
	res = run("browser_snapshot", nil)
	require.False(t, res.IsError, resultText(res))
	assert.Contains(t, resultText(res), "Welcome, ada")
	require.NoError(t, cs.Close()) // the process exits: its stderr is complete

	require.Contains(t, stderr.String(), "tool=browser_login", "the debug log was captured")
	seen = append(seen, stderr.String())
	for i, x := range seen {
		assert.NotContains(t, x, secret, "item %d", i)
	}
}

// A vault file others can read is refused at start, naming the file only.
func TestVaultFlagRefusesAFileOthersCanRead(t *testing.T) {
	vaultFile := filepath.Join(t.TempDir(), "vault.json")
	require.NoError(t, os.WriteFile(vaultFile, []byte(`{"x": {"username": "u", "password": "open-secret"}}`), 0o644))
	cmd := diesWithTest(exec.Command(binary, append(serverArgs(t.TempDir()), "-vault", vaultFile)...))
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "readable by its owner only")
	assert.NotContains(t, string(out), "open-secret")
}

// -allowed-domains puts every call under the policy, as in examples/server:
// a page off the list (here a loopback address, which no list allows) is
// refused forbidden before the browser sends it a request; an explicitly
// empty list is refused at start.
func TestGuardFlagsRefuseNavigationOffTheList(t *testing.T) {
	s := startSite(t)
	cs, _ := startServer(t, "-allowed-domains", "app.example.com", "-mode", "local")
	res := callTool(t, cs, "browser_navigate", map[string]any{"url": s.URL + "/form"})
	require.True(t, res.IsError)
	assert.Contains(t, resultText(res), "refused by the browser policy")
	assert.Contains(t, resultText(res), "forbidden")
	assert.Zero(t, s.hits.Load(), "the site received no request")

	out, err := diesWithTest(exec.Command(binary, append(serverArgs(t.TempDir()), "-allowed-domains=")...)).CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "validation_failed")
}
