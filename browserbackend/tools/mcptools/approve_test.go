package mcptools_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
)

// approvalChain returns Tools over one fake local provider whose links
// calls wait for an approval, with a recorder.
func approvalChain() (*tools.Tools, *browserbackendtest.Provider, *recorder.Recorder) {
	prov := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)}
	log := browserbackendtest.DiscardLogger()
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: []browserbackend.Provider{prov}, Logger: log})
	rec := recorder.New(recorder.Options{})
	return tools.New(tools.Options{Selector: sel, Logger: log, Recorder: rec, Approvals: []string{tools.ApproveLinks}}), prov, rec
}

// approvals returns the approval events of every conversation rec holds.
func approvals(rec *recorder.Recorder) []recorder.PageEvent {
	var out []recorder.PageEvent
	for _, conv := range rec.Conversations() {
		for _, e := range rec.Entries(conv) {
			if e.Type == recorder.TypeEvent && e.Event.Type == "approval" {
				out = append(out, *e.Event)
			}
		}
	}
	return out
}

// On the MCP server a gated call asks the session's client through
// elicitation (the official go-sdk client with an ElicitationHandler):
// accepted with approve true runs it; approve false, declined or dismissed
// is approval_denied; and a client without the elicitation capability gets
// approval_unavailable saying so. Nothing reaches a backend unless
// approved, and each decision is recorded as the client's.
func TestApprovalOverMCPElicitation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  *mcp.ElicitResult // nil: the client cannot elicit
		runs    bool
		outcome string
		says    string
	}{
		{"approved", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, true, "approved", ""},
		{"approve false", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, false, "denied", "was not approved"},
		{"declined", &mcp.ElicitResult{Action: "decline"}, false, "denied", "declined"},
		{"dismissed", &mcp.ElicitResult{Action: "cancel"}, false, "denied", "dismissed"},
		{"no elicitation capability", nil, false, "unavailable", "does not support elicitation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl, prov, rec := approvalChain()
			_, ms := serve(t, mcptools.Options{Tools: tl})
			var asked []string
			var opts *mcp.ClientOptions
			if tc.answer != nil {
				opts = &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return tc.answer, nil
				}}
			}
			cs := connect(t, ms, opts)
			res := call(t, cs, "browser_links", map[string]any{"contains": "docs"})
			assert.Equal(t, !tc.runs, res.IsError, text(res))
			if tc.runs {
				assert.Equal(t, 1, prov.Builds())
			} else {
				assert.Contains(t, text(res), tc.says)
				assert.Zero(t, prov.Proposed(), "nothing reaches a backend before the approval")
			}
			if tc.answer != nil {
				require.Len(t, asked, 1)
				assert.Contains(t, asked[0], "links")
			}
			ev := approvals(rec)
			require.Len(t, ev, 1)
			assert.Equal(t, tc.outcome, ev[0].Handled)
			if tc.answer != nil {
				assert.Contains(t, ev[0].Detail, "by mcp client browserchain-test")
			}
		})
	}
}

// A client that never answers the elicitation: the call fails
// approval_timeout at its deadline (timeout_ms), on synctest's clock.
func TestApprovalOverMCPElicitationTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl, prov, rec := approvalChain()
		_, ms := serve(t, mcptools.Options{Tools: tl})
		quit := make(chan struct{})
		t.Cleanup(func() { close(quit) })
		cs := connect(t, ms, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select { // the user walked away
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-quit:
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
		}})
		res := call(t, cs, "browser_links", map[string]any{"timeout_ms": 60_000})
		require.True(t, res.IsError)
		assert.Contains(t, text(res), "no approval before its deadline")
		assert.Zero(t, prov.Proposed())
		ev := approvals(rec)
		require.Len(t, ev, 1)
		assert.Equal(t, "timed out", ev[0].Handled)
	})
}

// tsSDK returns the node binary and the node_modules holding the
// TypeScript MCP SDK that scripts/setup.sh installs with the conformance
// suite ($BROWSERCHAIN_MCP_CONFORMANCE overrides the directory).
func tsSDK(t *testing.T) (node, modules string) {
	dir := os.Getenv("BROWSERCHAIN_MCP_CONFORMANCE")
	if dir == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		dir = filepath.Join(home, ".cache", "browserchain", "mcp-conformance", "0.1.16")
	}
	node, modules = filepath.Join(dir, "node"), filepath.Join(dir, "node_modules")
	for _, p := range []string{node, filepath.Join(modules, "@modelcontextprotocol", "sdk")} {
		_, err := os.Stat(p)
		require.NoError(t, err, "the TypeScript MCP SDK is missing: run scripts/setup.sh")
	}
	return node, modules
}

// The TypeScript SDK's client, over streamable HTTP, answers the approval
// elicitations: approved runs the call, denied refuses it.
func TestApprovalOverMCPElicitationWithTheTypeScriptSDK(t *testing.T) {
	node, modules := tsSDK(t)
	tl, prov, rec := approvalChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	hs := httptest.NewServer(mcptools.StreamableHTTPHandler(ms, nil))
	t.Cleanup(hs.Close)

	cmd := exec.CommandContext(testCtx(t), node, filepath.Join("testdata", "approval-client.cjs"), hs.URL)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var got struct {
		Asked []string
		Calls []struct {
			IsError bool
			Text    string
		}
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Len(t, got.Asked, 2)
	assert.Contains(t, got.Asked[0], "links")
	require.Len(t, got.Calls, 2)
	assert.False(t, got.Calls[0].IsError, got.Calls[0].Text)
	assert.True(t, got.Calls[1].IsError)
	assert.Contains(t, got.Calls[1].Text, "mcp client ts-sdk-approver denied it")
	assert.Equal(t, 1, prov.Builds(), "only the approved call reached a backend")
	ev := approvals(rec)
	require.Len(t, ev, 2)
	assert.Equal(t, []string{"approved", "denied"}, []string{ev[0].Handled, ev[1].Handled})
}
