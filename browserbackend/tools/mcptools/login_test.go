package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"log/slog"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/internal/logtest"
	"github.com/browserchain/browserchain/local"
)

// loginSecret is the vault's password; it must reach the site and nothing
// the client or the logs see.
const loginSecret = "pw-7Hq2-correct-horse"

// browser_login over an in-process MCP client session on local: the form
// is filled from the host's vault and submitted, the site receives the
// password, and no result (text or structured content), tool error, MCP
// log message or server log record holds it.
func TestLoginOverMCPNeverShowsThePassword(t *testing.T) {
	posted := make(chan string, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		page(w, "Sign in", `<form method="post" action="/welcome"><label for="u">User</label><input id="u" name="u">
<label for="p">Password</label><input id="p" name="p" type="password"><button id="signin">Sign in</button></form>`)
	})
	mux.HandleFunc("/welcome", func(w http.ResponseWriter, r *http.Request) {
		posted <- r.PostFormValue("p")
		page(w, "Welcome", "<p>Welcome, "+html.EscapeString(r.PostFormValue("u"))+"</p>")
	})
	site := chromiumtest.LoopbackServer(t, mux)

	var logs logtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := local.New(local.Options{Logger: log})
	t.Cleanup(func() { _ = b.Close() })
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{local.NewProvider(b)}, Logger: log})
	vault := tools.VaultFunc(func(_ context.Context, _ browserbackend.Invocation, name string) (tools.Credential, error) {
		if name != "login:site" {
			return tools.Credential{}, errors.New("no such entry; the one there holds " + loginSecret)
		}
		return tools.Credential{Username: "ada", Password: loginSecret}, nil
	})
	tl := tools.New(tools.Options{Selector: sel, ScreenshotDir: t.TempDir(), Logger: log, Vault: vault})

	mcpLogs := make(chan *mcp.LoggingMessageParams, 256)
	_, ms := serve(t, mcptools.Options{Tools: tl, Logger: log})
	cs := connect(t, ms, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { mcpLogs <- r.Params },
	})
	require.NoError(t, cs.SetLoggingLevel(testCtx(t), &mcp.SetLoggingLevelParams{Level: "debug"}))

	var seen []string
	record := func(res *mcp.CallToolResult) {
		raw, err := json.Marshal(res)
		require.NoError(t, err)
		seen = append(seen, string(raw))
	}
	fields := []map[string]any{{"selector": "#u", "value": "%username%"}, {"selector": "#p", "value": "%password%"}}

	ok[tools.NavigateResult](t, cs, "browser_navigate", map[string]any{"url": site.URL + "/login"})

	bad := call(t, cs, "browser_login", map[string]any{"credential": "login:other", "fields": fields})
	require.True(t, bad.IsError)
	assert.Contains(t, text(bad), "provider_error")
	record(bad)

	filled, res := ok[tools.LoginResult](t, cs, "browser_login", map[string]any{"credential": "login:site", "fields": fields})
	assert.Equal(t, 2, filled.Filled)
	assert.Contains(t, text(res), "Filled 2 field(s) from the vault")
	record(res)
	_, res = ok[mcptools.SnapshotSummary](t, cs, "browser_snapshot", nil)
	record(res)
	_, res = ok[mcptools.ExtractSummary](t, cs, "browser_extract", map[string]any{"selector": "form"})
	record(res)

	done, res := ok[tools.LoginResult](t, cs, "browser_login", map[string]any{"credential": "login:site", "fields": fields,
		"submit": map[string]any{"selector": "#signin"}})
	record(res)
	assert.True(t, done.Submitted)
	assert.Equal(t, site.URL+"/welcome", done.URL)
	assert.Equal(t, loginSecret, <-posted, "the form was filled from the vault")
	_, res = ok[mcptools.SnapshotSummary](t, cs, "browser_snapshot", nil)
	record(res)

	require.NoError(t, cs.Close())
	require.NotZero(t, len(mcpLogs), "MCP log messages were captured")
	for len(mcpLogs) > 0 {
		raw, err := json.Marshal(<-mcpLogs)
		require.NoError(t, err)
		seen = append(seen, string(raw))
	}
	require.Contains(t, logs.String(), `tool=browser_login`, "the server's records were captured")
	seen = append(seen, logs.String())
	for i, s := range seen {
		assert.NotContains(t, s, loginSecret, "item %d", i)
	}
}
