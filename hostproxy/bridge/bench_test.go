//go:build linux

package bridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/hostproxy"
	"github.com/browserchain/browserchain/hostproxy/hostproxytest"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// BenchmarkEvaluateRoundTrip compares one Runtime.evaluate("1+1") round trip
// on the same headless Chromium: directly over CDP (cdp-inspect) and through
// the host-bridge path (proxy → hub SSE → bridge → CDP → result POST). Each
// reports the median latency as "median-µs".
//
//	go test -run XXX -bench EvaluateRoundTrip ./hostproxy/bridge/
func BenchmarkEvaluateRoundTrip(b *testing.B) {
	chrome := chromiumtest.Start(b)
	cfg := cdpinspect.DefaultConfig()
	cfg.Host, cfg.Port = "127.0.0.1", chrome.Port
	dial := CDPInspectDialer(cfg, cdpinspect.WithWebSocketURL(chrome.BrowserWSURL), cdpinspect.WithUserDataDirs(), cdpinspect.WithLogger(quiet()))
	cmd := browserbackend.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1+1","returnByValue":true}`)}

	b.Run("raw-cdp", func(b *testing.B) {
		br, err := dial(context.Background())
		require.NoError(b, err)
		defer br.Close()
		hostproxytest.MeasureSends(b, br, cmd)
	})
	b.Run("host-bridge", func(b *testing.B) {
		ts := newTestServer(b, nil)
		runBridge(b, ts, Options{Dial: dial})
		be := ts.proxy.NewHostBridgeBackend(browserbackend.Invocation{}, hostproxy.BackendOptions{})
		defer be.Close()
		hostproxytest.MeasureSends(b, be, cmd)
	})
}
