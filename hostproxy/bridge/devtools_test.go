package bridge_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy/bridge"
)

func TestCheckDevToolsAcceptsOnlyLoopback(t *testing.T) {
	cfg := func(host string) cdpinspect.Config {
		c := cdpinspect.DefaultConfig()
		c.Host = host
		return c
	}
	for _, h := range []string{"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"} {
		assert.NoError(t, bridge.CheckDevTools(cfg(h), ""), h)
	}
	for _, h := range []string{"8.8.8.8", "example.com", "10.0.0.1", "0.0.0.0", ""} {
		err := bridge.CheckDevTools(cfg(h), "")
		assert.ErrorIs(t, err, browserbackend.ErrNonLoopback, h)
		assert.ErrorContains(t, err, "bridge: DevTools host", h)
	}
	assert.NoError(t, bridge.CheckDevTools(cfg("localhost"), "ws://127.0.0.1:9222/devtools/browser/x"))
	assert.ErrorIs(t, bridge.CheckDevTools(cfg("localhost"), "ws://8.8.8.8:9222/devtools/browser/x"), browserbackend.ErrNonLoopback)
	assert.ErrorIs(t, bridge.CheckDevTools(cfg("localhost"), "http://x"), &browserbackend.Error{Code: browserbackend.CodeInvalidParams})
}
