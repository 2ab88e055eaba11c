package tools_test

import (
	"context"
	"testing"
	"time"

	"github.com/browserchain/browserchain/eventhub/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/auth"
	"github.com/browserchain/browserchain/hostproxy/bridge"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// startBridge runs the reference desktop bridge (interface macos) against a
// fresh headless Chromium, connected to h, until the test ends, and waits
// until it is on the roster; opts are the Chromium's.
func startBridge(t testing.TB, h *hubStack, opts ...chromiumtest.Option) {
	t.Helper()
	runBridgeOn(t, h, chromiumtest.Start(t, opts...), false)
}

// runBridgeOn runs the reference desktop bridge on browser b; with tabs,
// each conversation gets its own tab through a cdp-inspect Provider
// (bridge.CDPInspectTabs).
func runBridgeOn(t testing.TB, h *hubStack, b *chromiumtest.Browser, tabs bool) {
	t.Helper()
	runBridgeAs(t, h, b, tabs, "")
}

// runBridgeAs is runBridgeOn for actor ("" means the runtime's own).
func runBridgeAs(t testing.TB, h *hubStack, b *chromiumtest.Browser, tabs bool, actor string) {
	t.Helper()
	tok, err := h.rt.Auth.Mint(auth.Grant{Actor: actor, InterfaceID: wire.InterfaceMacOS, ClientID: "mac-1"})
	require.NoError(t, err)
	cfg := cdpinspect.DefaultConfig()
	cfg.Host, cfg.Port, cfg.ProbeTimeoutMs = "127.0.0.1", b.Port, 5000
	opts := []cdpinspect.Option{cdpinspect.WithWebSocketURL(b.BrowserWSURL), cdpinspect.WithUserDataDirs()}
	bo := bridge.Options{
		ServerURL: h.url, Token: tok.Token, ClientID: "mac-1", InterfaceID: wire.InterfaceMacOS,
		Dial:   bridge.CDPInspectDialer(cfg, opts...),
		Logger: quietLogger(), MinBackoff: 10 * time.Millisecond,
	}
	if tabs {
		bo.DialConversation = bridge.CDPInspectTabs(cdpinspect.NewProvider(cfg, opts...))
	}
	br, err := bridge.New(bo)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	})
	h.waitClient(t, wire.InterfaceMacOS)
}
