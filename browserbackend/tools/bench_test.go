package tools_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
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
					if _, err := tl.Extract(ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("snapshot", func(b *testing.B) {
				for b.Loop() {
					if _, err := tl.Snapshot(ctx, inv, tools.SnapshotInput{}); err != nil {
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
						if _, err := tl.Extract(c.ctx, inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
