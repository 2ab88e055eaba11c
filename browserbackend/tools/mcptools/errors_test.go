package mcptools_test

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/browserbackend/tools/mcptools"
	"github.com/browserchain/browserchain/cdpinspect"
)

// A browser_mode outside the schema's enum is refused by the schema, as a
// tool error that lists the accepted values.
func TestInvalidBrowserModeIsAToolErrorBeforeAnyCDPCommand(t *testing.T) {
	for _, mode := range []string{"chrome", "host-bridge", "cdp", " auto2 "} {
		t.Run(mode, func(t *testing.T) {
			tl, provs := fakeChain()
			_, ms := serve(t, mcptools.Options{Tools: tl})
			cs := connect(t, ms, nil)
			for _, name := range mcptools.ToolNames {
				res := call(t, cs, name, with(validArgs[name], "browser_mode", mode))
				require.True(t, res.IsError, name)
				txt := text(res)
				assert.Contains(t, txt, "browser_mode", name)
				assert.Contains(t, txt, "auto extension cdp-inspect cdp-debugger local playwright", "%s: the values and aliases are listed", name)
			}
			for _, p := range provs {
				assert.Zero(t, p.Proposed(), "%s: no provider was even asked", p.K)
				assert.Zero(t, p.Builds(), "%s: nothing was built", p.K)
				for _, b := range p.Backends() {
					assert.Empty(t, b.Calls(), "%s: no CDP command was sent", p.K)
				}
			}
		})
	}
}

// An invalid default mode (the -mode flag) is refused the same way.
func TestInvalidDefaultModeIsAToolError(t *testing.T) {
	tl, provs := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl, DefaultMode: "chrome"})
	cs := connect(t, ms, nil)
	res := call(t, cs, "browser_snapshot", nil)
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "accepted values are auto, extension, cdp-inspect, local")
	for _, p := range provs {
		assert.Zero(t, p.Proposed(), p.K)
	}
}

func TestPinnedModeThatIsUnavailableReturnsTheReportWithRemediation(t *testing.T) {
	// A loopback port nothing listens on: cdp-inspect's discovery is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	cfg := cdpinspect.DefaultConfig()
	cfg.Host = "127.0.0.1"
	cfg.Port = port
	log := browserbackendtest.DiscardLogger()
	local := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)}
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: log,
		Providers: []browserbackend.Provider{cdpinspect.NewProvider(cfg, cdpinspect.WithLogger(log)), local}})
	_, ms := serve(t, mcptools.Options{Tools: tools.New(tools.Options{Selector: sel, Logger: log})})
	cs := connect(t, ms, nil)

	res := call(t, cs, "browser_navigate", map[string]any{"url": "http://127.0.0.1:1/", "browser_mode": "cdp-debugger"})
	require.True(t, res.IsError)
	txt := text(res)
	assert.Contains(t, txt, `Requested browser_mode "cdp-inspect" is unavailable.`)
	assert.Contains(t, txt, "Attempted backends:\n  1. cdp-inspect")
	assert.Contains(t, txt, "To fix:\n  - ", "the remediation checklist is in the text")
	assert.Contains(t, txt, "browser_status", "the text says what to call next")
	assert.Zero(t, local.Builds(), "a pinned mode never falls back to local")
	assert.Nil(t, res.StructuredContent, "a failure has no structured result")
}

// A conversation_id over tools.MaxConversationIDBytes, or with a control
// character, is a tool error before any provider is asked, and the server
// does not keep it (a client sending distinct huge ids grew the server's
// memory without bound). A named conversation is forgotten once
// browser_close closed it.
func TestAnOversizedConversationIDIsRefusedAndNotKept(t *testing.T) {
	tl, provs := fakeChain()
	srv, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)
	for _, id := range []string{strings.Repeat("c", tools.MaxConversationIDBytes+1), "conv\x00x", "conv\nx"} {
		for _, name := range mcptools.ToolNames {
			res := call(t, cs, name, with(validArgs[name], "conversation_id", id))
			require.True(t, res.IsError, name)
			assert.Contains(t, text(res), "conversation id", name)
		}
	}
	assert.Empty(t, srv.Conversations(), "no refused id is kept")
	for _, p := range provs {
		assert.Zero(t, p.Proposed(), "%s: no provider was asked", p.K)
	}

	named := strings.Repeat("n", tools.MaxConversationIDBytes)
	res := call(t, cs, "browser_status", map[string]any{"conversation_id": named})
	require.False(t, res.IsError, text(res))
	assert.Contains(t, srv.Conversations(), named)
	res = call(t, cs, "browser_close", map[string]any{"conversation_id": named})
	require.False(t, res.IsError, text(res))
	assert.NotContains(t, srv.Conversations(), named, "closed, so no longer kept")
}

// A URL longer than Chromium loads is refused before any provider is asked.
func TestAURLOverChromiumsLimitIsRefused(t *testing.T) {
	tl, provs := fakeChain()
	_, ms := serve(t, mcptools.Options{Tools: tl})
	cs := connect(t, ms, nil)
	res := call(t, cs, "browser_navigate", map[string]any{"url": "https://example.test/?" + strings.Repeat("q", tools.MaxURLBytes)})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "Chromium loads at most")
	for _, p := range provs {
		assert.Zero(t, p.Proposed(), "%s: no provider was asked", p.K)
	}
}

// browser_status reports what a probe finds: cdp-inspect with nothing on
// its port is unavailable, even when only a pinned mode would propose it,
// and the remediation names the server's flags, not configuration keys.
func TestStatusProbesAndReportsCDPInspectWithNothingOnItsPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	cfg := cdpinspect.DefaultConfig()
	cfg.Host = "127.0.0.1"
	cfg.Port = port
	log := browserbackendtest.DiscardLogger()
	local := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)}
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: log,
		Providers: []browserbackend.Provider{cdpinspect.NewProvider(cfg, cdpinspect.WithLogger(log)), local}})
	_, ms := serve(t, mcptools.Options{Tools: tools.New(tools.Options{Selector: sel, Logger: log})})
	cs := connect(t, ms, nil)

	rep, res := ok[tools.StatusReport](t, cs, "browser_status", nil)
	ci, found := rep.Backend(browserbackend.KindCDPInspect)
	require.True(t, found)
	assert.False(t, ci.Available, "nothing listens on %d", port)
	assert.Equal(t, tools.VerifiedProbe, ci.VerifiedBy)
	txt := text(res)
	assert.Contains(t, txt, "- cdp-inspect: unavailable")
	assert.Contains(t, txt, "-cdp-port")
	assert.NotContains(t, txt, "Config.")
	assert.NotContains(t, txt, "cdpInspect.")
	assert.Zero(t, local.Builds(), "a status builds nothing")
}
