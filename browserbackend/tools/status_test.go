package tools_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/browserbackendtest"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/internal/chromiumtest"
	"github.com/browserchain/browserchain/local"
)

// closedPort returns a loopback port nothing listens on (bound, then
// released).
func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// referenceChain is the reference provider chain: the hub's extension and
// host-bridge providers (a hub with no clients), cdp-inspect enabled on port,
// and local (never launched by a status report).
func referenceChain(t *testing.T, port int) *browserbackend.Selector {
	hub := eventhub.New(eventhub.WithLogger(quietLogger()))
	proxy := hostproxy.New(hostproxy.Options{Hub: hub, Logger: quietLogger()})
	t.Cleanup(func() { proxy.Close(); hub.Close() })
	cfg := cdpinspect.DefaultConfig()
	cfg.Enabled = true
	cfg.Host = "127.0.0.1"
	cfg.Port = port
	cfg.ProbeTimeoutMs = 5000
	lb := local.New(local.Options{Logger: quietLogger()})
	t.Cleanup(func() { lb.Close() })
	return browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger(), Providers: []browserbackend.Provider{
		proxy.ExtensionProvider(hostproxy.ProviderOptions{}),
		proxy.HostBridgeProvider(hostproxy.ProviderOptions{}),
		cdpinspect.NewProvider(cfg, cdpinspect.WithUserDataDirs()),
		local.NewProvider(lb),
	}})
}

func TestStatusWithoutExtensionAndWithClosedDebugPort(t *testing.T) {
	sel := referenceChain(t, closedPort(t))
	inv := browserbackend.Invocation{ConversationID: "conv-s", InterfaceID: "cli", ActorPrincipalID: "alice"}
	rep, err := tools.Status(context.Background(), sel, inv, tools.StatusOptions{Probe: true})
	require.NoError(t, err)

	ext, ok := rep.Backend(browserbackend.KindExtension)
	require.True(t, ok)
	assert.False(t, ext.Available, "no extension client is connected")
	assert.Equal(t, tools.VerifiedPreflight, ext.VerifiedBy, "known without touching the network")
	assert.Equal(t, browserbackend.CodeNoClient, ext.Code)
	assert.Equal(t, sel.Remediation(browserbackend.Attempt{Kind: browserbackend.KindExtension, Code: browserbackend.CodeNoClient}), ext.UserActions)
	assert.False(t, ext.InAutoOrder)
	assert.Equal(t, "extension-ws", ext.Transport, "the seed's browser_status label")

	cdpi, _ := rep.Backend(browserbackend.KindCDPInspect)
	assert.False(t, cdpi.Available, "the debug port is closed")
	assert.Equal(t, tools.VerifiedProbe, cdpi.VerifiedBy)
	assert.Equal(t, browserbackend.CodeUnreachable, cdpi.Code)
	assert.Equal(t, browserbackend.CodeUnreachable, cdpi.Detail, "the discovery code is reported")
	assert.NotEmpty(t, cdpi.UserActions)
	assert.Contains(t, cdpi.UserActions[0], "--remote-debugging-port")
	assert.True(t, cdpi.InAutoOrder, "it is configured on, so auto still lists it")

	loc, _ := rep.Backend(browserbackend.KindLocal)
	assert.True(t, loc.Available, "the local preflight finds Chromium and the driver")
	assert.Equal(t, tools.VerifiedProbe, loc.VerifiedBy)

	assert.Equal(t, []browserbackend.Kind{browserbackend.KindCDPInspect, browserbackend.KindLocal}, rep.AutoOrder)
	assert.Equal(t, browserbackend.KindLocal, rep.RecommendedKind, "the first available backend in auto order")
	assert.Equal(t, browserbackend.Mode("local"), rep.RecommendedMode)
	assert.Subset(t, rep.UserActions, ext.UserActions, "what would give a better browser")
	assert.Subset(t, rep.UserActions, cdpi.UserActions)
	assert.Empty(t, rep.StickyKind)

	raw, err := json.Marshal(rep)
	require.NoError(t, err, "the report is JSON-serialisable")
	var back tools.StatusReport
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, rep, back, "and survives a round trip")
}

func TestStatusRecommendsTheFirstAvailableInAutoOrder(t *testing.T) {
	b := chromiumtest.Start(t)
	sel := referenceChain(t, b.Port)
	inv := browserbackend.Invocation{ConversationID: "conv-s", InterfaceID: "cli"}
	rep, err := tools.Status(context.Background(), sel, inv, tools.StatusOptions{Probe: true})
	require.NoError(t, err)
	cdpi, _ := rep.Backend(browserbackend.KindCDPInspect)
	assert.True(t, cdpi.Available, "a listening Chrome is found by the probe")
	assert.Equal(t, tools.VerifiedProbe, cdpi.VerifiedBy)
	assert.Equal(t, browserbackend.KindCDPInspect, rep.RecommendedKind, "cdp-inspect comes before local in auto order")
	assert.Equal(t, browserbackend.Mode("cdp-inspect"), rep.RecommendedMode)
	ext, _ := rep.Backend(browserbackend.KindExtension)
	hb, _ := rep.Backend(browserbackend.KindHostBridge)
	assert.Equal(t, append(ext.UserActions, hb.UserActions...), rep.UserActions,
		"only the extension or the desktop bridge would be better")
}

func TestStatusFollowsProviderOrderStickyKindAndPinnedOnlyBackends(t *testing.T) {
	extAvail := true
	ext := &browserbackendtest.Provider{K: browserbackend.KindExtension, Desc: refDesc(browserbackend.KindExtension), Available: func() bool { return extAvail }}
	loc := &browserbackendtest.Provider{K: browserbackend.KindLocal, Desc: refDesc(browserbackend.KindLocal)}
	// cdp-inspect not enabled for auto: the reference provider proposes only
	// when pinned.
	cdpi := cdpinspect.NewProvider(cdpinspect.DefaultConfig(), cdpinspect.WithUserDataDirs())
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger(),
		Providers: []browserbackend.Provider{ext, cdpi, loc}})
	inv := browserbackend.Invocation{ConversationID: "conv-t", InterfaceID: "cli"}

	rep, err := tools.Status(context.Background(), sel, inv, tools.StatusOptions{})
	require.NoError(t, err)
	assert.Equal(t, []browserbackend.Kind{browserbackend.KindExtension, browserbackend.KindLocal}, rep.AutoOrder)
	assert.Equal(t, browserbackend.KindExtension, rep.RecommendedKind)
	assert.Equal(t, browserbackend.Mode("extension"), rep.RecommendedMode)
	assert.Empty(t, rep.UserActions, "nothing better to set up")
	c, _ := rep.Backend(browserbackend.KindCDPInspect)
	assert.True(t, c.Available, "cdp-inspect can still be pinned")
	assert.False(t, c.InAutoOrder)
	assert.Equal(t, tools.VerifiedPreflight, c.VerifiedBy, "no probe was asked for")
	_, listed := rep.Backend(browserbackend.KindHostBridge)
	assert.False(t, listed, "a kind no provider describes is not reported")

	// A call served by local makes local the conversation's sticky kind.
	extAvail = false
	tl := tools.New(tools.Options{Selector: sel, Logger: quietLogger()})
	_, err = tl.Read().Links(context.Background(), inv, tools.LinksInput{})
	require.NoError(t, err)
	rep, err = tl.Status(context.Background(), inv, tools.StatusInput{})
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindLocal, rep.StickyKind)
	assert.Equal(t, browserbackend.KindLocal, rep.RecommendedKind, "the extension went away")
	e, _ := rep.Backend(browserbackend.KindExtension)
	assert.Equal(t, browserbackend.CodeNoClient, e.Code)

	// Detach forgets it (SEL-9).
	res, err := tl.Detach(context.Background(), inv, tools.ReleaseInput{})
	require.NoError(t, err)
	assert.Equal(t, browserbackend.KindLocal, res.Forgot)
	rep, err = tl.Status(context.Background(), inv, tools.StatusInput{})
	require.NoError(t, err)
	assert.Empty(t, rep.StickyKind)
}

func TestStatusRejectsAnInvalidMode(t *testing.T) {
	sel := browserbackend.NewSelector(browserbackend.Options{Logger: quietLogger()})
	_, err := tools.Status(context.Background(), sel, browserbackend.Invocation{Mode: "host-bridge"}, tools.StatusOptions{})
	assert.ErrorIs(t, err, tools.ErrInvalidMode)
}
