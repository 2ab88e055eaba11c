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
	b := chromiumtest.Start(t, opts...)
	tok, err := h.rt.Auth.Mint(auth.Grant{InterfaceID: wire.InterfaceMacOS, ClientID: "mac-1"})
	require.NoError(t, err)
	cfg := cdpinspect.DefaultConfig()
	cfg.Host, cfg.Port, cfg.ProbeTimeoutMs = "127.0.0.1", b.Port, 5000
	br, err := bridge.New(bridge.Options{
		ServerURL: h.url, Token: tok.Token, ClientID: "mac-1", InterfaceID: wire.InterfaceMacOS,
		Dial:   bridge.CDPInspectDialer(cfg, cdpinspect.WithWebSocketURL(b.BrowserWSURL), cdpinspect.WithUserDataDirs()),
		Logger: quietLogger(), MinBackoff: 10 * time.Millisecond,
	})
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
