package extension_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkExtensionEvaluateRoundTrip measures Runtime.evaluate("1+1")
// through the whole extension path (selector → proxy → hub → SSE →
// service worker → chrome.debugger → result socket, or a POST before it is
// open) and, for each command, the
// time the extension itself spent inside chrome.debugger.sendCommand (its
// durationMs) and from the frame's arrival to its result post (handledMs).
// RTT minus durationMs is the relay's overhead. It also measures the
// same command over a direct CDP WebSocket session on the same tab.
//
//	go test -run XXX -bench ExtensionEvaluate -benchtime 200x ./examples/extension/
func BenchmarkExtensionEvaluateRoundTrip(b *testing.B) {
	s := startStack(b, stackOptions{})
	fx := startFixtures(b)
	s.waitExtension(b)
	c := s.rt.Selector.Client(s.invocation("bench"))
	defer c.Close()
	created := openPage(b, c, fx.page("bench"))
	params := map[string]any{"expression": "1+1", "returnByValue": true}
	send(b, c, "Runtime.evaluate", params, nil) // attach and warm up

	s.drainIDs()
	rtt := make([]float64, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		_, err := trySend(c, "Runtime.evaluate", params)
		rtt = append(rtt, float64(time.Since(start).Microseconds())/1000)
		require.NoError(b, err)
	}
	b.StopTimer()
	var inside, handled, serverSeen, down, up []float64
	for {
		select {
		case id := <-s.ids:
			for _, p := range s.waitPosts(b, id, 1) {
				if p.DurationMs != nil && p.HandledMs != nil {
					inside = append(inside, *p.DurationMs)
					handled = append(handled, *p.HandledMs)
				}
				if t0, ok := s.created.Load(id); ok && p.ReceivedAt > 0 {
					ms := func(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }
					down = append(down, p.ReceivedAt-ms(t0.(time.Time)))
					up = append(up, ms(p.Arrived)-p.PostedAt)
				}
				if t0, ok := s.created.Load(id); ok {
					serverSeen = append(serverSeen, float64(p.Arrived.Sub(t0.(time.Time)).Microseconds())/1000)
				}
			}
			continue
		default:
		}
		break
	}
	direct := directEvaluate(b, s, int(created.ID), b.N)
	b.ReportMetric(median(rtt), "ext-rtt-p50-ms")
	b.ReportMetric(median(inside), "debugger-p50-ms")
	b.ReportMetric(median(handled), "in-extension-p50-ms")
	// request created → its result arriving: the hub, SSE, the extension
	// and the result message, without the selector and proxy around them.
	// (A socket result is stamped when the socket accepts it, a POST when
	// it arrives.)
	b.ReportMetric(median(serverSeen), "publish-to-post-p50-ms")
	// The same machine's wall clock on both sides (the extension's is
	// coarsened to 0.1 ms): request created → frame handled in the worker,
	// and post sent → post arrived.
	b.ReportMetric(median(down), "sse-down-p50-ms")
	b.ReportMetric(median(up), "post-up-p50-ms")
	b.ReportMetric(median(rtt)-median(inside), "relay-overhead-p50-ms")
	b.ReportMetric(median(direct), "direct-cdp-p50-ms")
}

// directEvaluate runs n Runtime.evaluate commands over the browser's own
// DevTools WebSocket on the tab's target (flat session) and returns their
// round trips in ms.
func directEvaluate(b *testing.B, s *stack, tabID, n int) []float64 {
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	conn := dialCDP(b, s.browser.BrowserWSURL)
	sessionID := attachTarget(ctx, b, conn, func(typ, url string) bool {
		return typ == "page" && strings.HasSuffix(url, "/page/bench")
	})
	out := make([]float64, 0, n)
	for range n {
		start := time.Now()
		require.NoError(b, conn.call(ctx, sessionID, "Runtime.evaluate", map[string]any{"expression": "1+1", "returnByValue": true}, nil))
		out = append(out, float64(time.Since(start).Microseconds())/1000)
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
