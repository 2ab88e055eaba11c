package mcptools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
)

// callTimeout bounds each MCP call of a test: a guard against a hang, not
// synchronisation.
const callTimeout = 90 * time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// serve returns an mcptools.Server over tl; Close runs at cleanup.
func serve(t *testing.T, opts mcptools.Options) (*mcptools.Server, *mcp.Server) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = browserbackendtest.DiscardLogger()
	}
	s := mcptools.New(opts)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, s.NewMCPServer(nil)
}

// connect connects an in-process SDK client to ms.
func connect(t *testing.T, ms *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := testCtx(t)
	ct, st := mcp.NewInMemoryTransports()
	_, err := ms.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "browserchain-test", Version: "1"}, opts).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call runs one tool and returns its result; a protocol error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	return res
}

// ok calls a tool that must succeed and decodes its structured content.
func ok[R any](t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (R, *mcp.CallToolResult) {
	t.Helper()
	res := call(t, cs, name, args)
	require.False(t, res.IsError, "%s: %s", name, text(res))
	var out R
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &out), name)
	return out, res
}

// text joins the text content of a result.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// fakeChain returns fake providers of every kind, all available, and Tools
// over them.
func fakeChain() (*tools.Tools, []*browserbackendtest.Provider) {
	provs := []*browserbackendtest.Provider{
		{K: browserbackend.KindExtension, Desc: refDesc(browserbackend.KindExtension)}, {K: browserbackend.KindHostBridge, Desc: refDesc(browserbackend.KindHostBridge)},
		{K: browserbackend.KindCDPInspect, Desc: refDesc(browserbackend.KindCDPInspect)}, {K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)},
	}
	var ps []browserbackend.Provider
	for _, p := range provs {
		ps = append(ps, p)
	}
	log := browserbackendtest.DiscardLogger()
	sel := browserbackend.NewSelector(browserbackend.Options{Providers: ps, Logger: log})
	return tools.New(tools.Options{Selector: sel, Logger: log}), provs
}

// validArgs are arguments every tool accepts (apart from browser_mode).
var validArgs = map[string]map[string]any{
	"browser_navigate":         {"url": "http://127.0.0.1:1/"},
	"browser_snapshot":         {},
	"browser_screenshot":       {},
	"browser_click":            {"selector": "#q"},
	"browser_type":             {"selector": "#q", "text": "x"},
	"browser_hover":            {"selector": "#q"},
	"browser_scroll":           {},
	"browser_press_key":        {"key": "Enter"},
	"browser_select_option":    {"selector": "#q", "values": []string{"a"}},
	"browser_wait_for":         {"text": "x"},
	"browser_extract":          {},
	"browser_links":            {},
	"browser_attach":           {},
	"browser_detach":           {},
	"browser_close":            {},
	"browser_status":           {"probe": true},
	"browser_login":            {"credential": "x", "fields": []map[string]any{{"selector": "#u", "value": "%username%"}}},
	"browser_handle_dialog":    {"accept": true},
	"browser_file_upload":      {"selector": "#f", "paths": []string{"a.txt"}},
	"browser_history":          {"step": "back"},
	"browser_evaluate":         {"function": "() => 1"},
	"browser_console_messages": {},
	"browser_network_requests": {},
	"browser_fill_form":        {"fields": []map[string]any{{"selector": "#q", "value": "x"}}},
	"browser_drag":             {"from": map[string]any{"selector": "#a"}, "to": map[string]any{"selector": "#b"}},
	"browser_pdf_save":         {},
	"browser_resize":           {"width": 400, "height": 300},
	"browser_tabs":             {},
	"browser_act":              {"instruction": "open the menu"},
	"browser_observe":          {"instruction": "the menu"},
	"browser_save_context":     {"context_name": "crm"},
}

func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for a, b := range m {
		out[a] = b
	}
	return out
}

// refDesc is the real descriptor of a reference kind, for a fake provider
// of that kind (its modes, aliases and capabilities).
func refDesc(k browserbackend.Kind) *browserbackend.Descriptor {
	d := hostproxytest.ReferenceDescriptor(k)
	return &d
}
