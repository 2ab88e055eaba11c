//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// BenchmarkEvaluateRoundTripBridgeProcess compares Runtime.evaluate("1+1")
// on one Chromium directly over CDP and through the bridge running as a
// separate process, reporting median and p90 latencies.
//
//	go test -run XXX -bench RoundTrip ./examples/bridge/
func BenchmarkEvaluateRoundTripBridgeProcess(b *testing.B) {
	chrome := chromiumtest.Start(b)
	cmd := bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1+1","returnByValue":true}`)}
	b.Run("raw-cdp", func(b *testing.B) {
		cfg := cdpinspect.DefaultConfig()
		br, err := cdpinspect.Dial(context.Background(), cfg, cdpinspect.WithWebSocketURL(chrome.BrowserWSURL), cdpinspect.WithLogger(quiet()))
		require.NoError(b, err)
		defer br.Close()
		hostproxytest.MeasureSends(b, br, cmd)
	})
	b.Run("host-bridge-process", func(b *testing.B) {
		rs := hostproxytest.NewServer(b, hostproxytest.ServerOptions{Tokens: map[string]string{"tok": "alice"}})
		startBridgeProc(b, buildBridge(b), "-server", rs.URL, "-token", "tok", "-client-id", "mac-1",
			"-devtools", fmt.Sprintf("127.0.0.1:%d", chrome.Port), "-ws-url", chrome.BrowserWSURL)
		waitClient(b, rs.Hub, "mac-1", true)
		be := rs.Proxy.NewHostBridgeBackend(bb.Invocation{ActorPrincipalID: "alice"}, hostproxy.BackendOptions{})
		defer be.Close()
		hostproxytest.MeasureSends(b, be, cmd)
	})
}
