package tools_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/internal/chromiumtest"
)

// BenchmarkToolCall measures one tool call end to end on each backend: a
// fresh per-call Client, selection, the backend's build (dial/attach, page
// lookup, extension tab attach) and the operation's CDP commands.
func BenchmarkToolCall(b *testing.B) {
	s := startSite(b)
	backends := []struct {
		name  string
		setup func(b *testing.B) (*tools.Tools, browserbackend.Invocation)
	}{
		{"cdp-inspect", func(b *testing.B) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := cdpInspectTools(b)
			return tl, browserbackend.Invocation{ConversationID: "bench"}
		}},
		{"local", func(b *testing.B) (*tools.Tools, browserbackend.Invocation) {
			tl, _ := localTools(b)
			return tl, browserbackend.Invocation{ConversationID: "bench"}
		}},
		{"host-bridge", func(b *testing.B) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(b)
			startBridge(b, h)
			return h.tools(b), h.invocation("bench")
		}},
		{"extension", func(b *testing.B) (*tools.Tools, browserbackend.Invocation) {
			h := startRuntime(b)
			startExtension(b, h)
			return h.tools(b), h.invocation("bench")
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			tl, inv := be.setup(b)
			ctx := context.Background()
			if _, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: s.url("/form")}); err != nil {
				b.Fatal(err)
			}
			b.Run("extract", func(b *testing.B) {
				for b.Loop() {
					if _, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("snapshot", func(b *testing.B) {
				for b.Loop() {
					if _, err := tl.Read().Snapshot(ctx, inv, tools.SnapshotInput{}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("navigate", func(b *testing.B) {
				for b.Loop() {
					if _, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: s.url("/item/1")}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkGuardCost measures what a policy adds to one tool call (GRD-2's
// Fetch interception, the before/after URL checks): the same extract with
// and without a guard, on cdp-inspect and local.
func BenchmarkGuardCost(b *testing.B) {
	s := startSite(b)
	u, _ := url.Parse(s.main.URL)
	g := guard.MustNew(guard.Policy{AllowedDomains: []string{u.Host}, DevLoopback: []string{u.Host}, Logger: quietLogger()})
	for _, be := range []struct {
		name  string
		setup func(b *testing.B) *tools.Tools
	}{
		{"cdp-inspect", func(b *testing.B) *tools.Tools { tl, _ := cdpInspectTools(b); return tl }},
		{"local", func(b *testing.B) *tools.Tools { tl, _ := localTools(b); return tl }},
	} {
		b.Run(be.name, func(b *testing.B) {
			tl := be.setup(b)
			inv := browserbackend.Invocation{ConversationID: "bench-guard"}
			if _, err := tl.Navigate(context.Background(), inv, tools.NavigateInput{URL: s.url("/form")}); err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct {
				name string
				ctx  context.Context
			}{{"no-policy", context.Background()}, {"policy", guard.NewContext(context.Background(), g)}} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						if _, err := tl.Read().Extract(c.ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkToolCallOverhead measures what the ordinary path adds to one
// command on cdp-inspect (issue 16), on the Provider's shared connection.
// Interleaved per iteration in a rotating order, on one tab:
//   - raw: the extract tool's own Runtime.evaluate (the same expression,
//     so the same work in the browser), sent on a WebSocket of the
//     benchmark's own with a flat session, read on the caller's goroutine;
//   - client: the same command through a Selector Client built, used and
//     closed for it (selection, the Provider's Build of a view, Close);
//   - tool: tools.Extract over the ordinary path.
//
// The metrics are the medians and the differences to raw (the target for
// tool is ≤ 500 µs).
//
//	go test -run XXX -bench ToolCallOverhead -benchtime 2000x ./browserbackend/tools/
func BenchmarkToolCallOverhead(b *testing.B) {
	s := startSite(b)
	tl, br := cdpInspectTools(b)
	inv := browserbackend.Invocation{ConversationID: "bench-overhead"}
	ctx := context.Background()
	if _, err := tl.Navigate(ctx, inv, tools.NavigateInput{URL: s.url("/form")}); err != nil {
		b.Fatal(err)
	}
	raw := chromiumtest.DialRawTab(b, br.BrowserWSURL, s.url("/form"))
	params, _ := json.Marshal(map[string]any{"expression": tools.ExtractExpression(tools.DefaultExtractMaxChars), "returnByValue": true})
	sel := tl.Selector()
	var d [3][]time.Duration
	runs := [3]func(){
		func() { raw.Call("Runtime.evaluate", raw.SessionID, string(params)) },
		func() {
			c := sel.Client(inv)
			defer c.Close()
			if _, err := c.Send(ctx, browserbackend.Command{Method: "Runtime.evaluate", Params: params}); err != nil {
				b.Fatal(err)
			}
		},
		func() {
			if _, err := tl.Read().Extract(ctx, inv, tools.ExtractInput{}); err != nil {
				b.Fatal(err)
			}
		},
	}
	i := 0
	for b.Loop() {
		for k := range runs {
			j := (i + k) % len(runs)
			t0 := time.Now()
			runs[j]()
			d[j] = append(d[j], time.Since(t0))
		}
		i++
	}
	mr, mc, mt := median(d[0]), median(d[1]), median(d[2])
	b.ReportMetric(float64(mr.Microseconds()), "raw-µs/median")
	b.ReportMetric(float64((mc - mr).Microseconds()), "client-over-raw-µs")
	b.ReportMetric(float64((mt - mr).Microseconds()), "tool-over-raw-µs")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkRecorderCost measures what the flight recorder adds to a tool
// call on local: each iteration runs an extract and a screenshot with
// recording off and on (recorder.NewContext), in alternating order. The
// metrics are the medians, the cost in per cent, and the record's memory per
// recorded call (screenshots included).
//
//	go test -run XXX -bench RecorderCost -benchtime 200x ./browserbackend/tools/
func BenchmarkRecorderCost(b *testing.B) {
	s := startSite(b)
	tl, _ := localTools(b)
	inv := browserbackend.Invocation{ConversationID: "bench-recorder"}
	if _, err := tl.Navigate(context.Background(), inv, tools.NavigateInput{URL: s.url("/form")}); err != nil {
		b.Fatal(err)
	}
	rec := recorder.New(recorder.Options{MaxBytes: 1 << 30, MaxEntries: 1 << 20})
	ctxs := [2]context.Context{recorder.NewContext(context.Background(), nil), recorder.NewContext(context.Background(), rec)}
	var d [2][]time.Duration
	i := 0
	for b.Loop() {
		for k := range ctxs {
			j := (i + k) % 2
			t0 := time.Now()
			if _, err := tl.Read().Extract(ctxs[j], inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}}); err != nil {
				b.Fatal(err)
			}
			if _, err := tl.Read().Screenshot(ctxs[j], inv, tools.ScreenshotInput{}); err != nil {
				b.Fatal(err)
			}
			d[j] = append(d[j], time.Since(t0))
		}
		i++
	}
	off, on := median(d[0]), median(d[1])
	b.ReportMetric(float64(off.Microseconds()), "off-µs/median")
	b.ReportMetric(float64(on.Microseconds()), "on-µs/median")
	if off > 0 {
		b.ReportMetric(100*float64(on-off)/float64(off), "cost-%")
	}
	if st, ok := rec.Stats(inv.ConversationID); ok && st.Calls > 0 {
		b.ReportMetric(float64(st.Bytes)/float64(st.Calls), "record-B/call")
	}
}
