package harness

import (
	"context"
	"fmt"
	"net/url"
	"time"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/local"
)

// GuardResult is one row of the guard-cost figure: the same tools.Extract
// call on one backend, with or without a guard.Policy on its ctx.
type GuardResult struct {
	Backend string
	Policy  bool
	D       Durations
}

// Guard-cost backends, in report order.
const (
	GuardInspect = "cdp-inspect"
	GuardLocal   = "local"
	// The same with tools.Options.KeepClients (as examples/mcp runs): the
	// conversation keeps its Client, and a guard its Fetch interception,
	// between calls.
	GuardInspectKept = "cdp-inspect, kept Client"
	GuardLocalKept   = "local, kept Client"
)

// MeasureGuardCost times one extract tool call (`h1` of the form page) on
// cdp-inspect (a headless Chromium of its own) and local (the world's Playwright
// browser), each with no policy and with an allow-list policy for the
// fixture host (GRD-1 … GRD-3: before/after URL checks, the Fetch
// interception of documents), rounds times each, the four paths interleaved
// in a shuffled order per round after warmup rounds.
func MeasureGuardCost(ctx context.Context, w *World, rounds, warmup int) ([]GuardResult, error) {
	u, err := url.Parse(w.Fix.URL("/"))
	if err != nil {
		return nil, err
	}
	g, err := guard.New(guard.Policy{AllowedDomains: []string{u.Host}, DevLoopback: []string{u.Host}, Logger: discard})
	if err != nil {
		return nil, err
	}
	// A Chromium of its own: the world's browser holds the tabs of the
	// earlier phases, and a per-call cdp-inspect Client may pick any of them.
	ch, err := StartChromium(ctx, "")
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	cfg := InspectConfig()
	cfg.Host, cfg.Port = "127.0.0.1", ch.Port
	inspectTools := func(keep bool) *tools.Tools {
		return tools.New(tools.Options{Logger: discard, ScreenshotDir: ch.UserDataDir, KeepClients: keep,
			Selector: bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{
				cdpinspect.NewProvider(cfg, cdpinspect.WithWebSocketURL(ch.WSURL), cdpinspect.WithUserDataDirs(), cdpinspect.WithLogger(discard)),
			}})})
	}
	localTools := func(keep bool) *tools.Tools {
		return tools.New(tools.Options{Logger: discard, ScreenshotDir: ch.UserDataDir, KeepClients: keep,
			Selector: bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{local.NewProvider(w.Local)}}),
			CloseConversation: func(_ context.Context, _ bb.Kind, conv string) error {
				return w.Local.CloseConversation(conv)
			}})
	}
	inspect, loc := inspectTools(false), localTools(false)
	inspectKept, locKept := inspectTools(true), localTools(true)
	defer inspectKept.Shutdown()
	defer locKept.Shutdown()
	type row struct {
		res *GuardResult
		tl  *tools.Tools
		inv bb.Invocation
		ctx context.Context
	}
	var rows []row
	var out []GuardResult
	for _, be := range []struct {
		name string
		tl   *tools.Tools
	}{{GuardInspect, inspect}, {GuardLocal, loc}, {GuardInspectKept, inspectKept}, {GuardLocalKept, locKept}} {
		for _, pol := range []bool{false, true} {
			out = append(out, GuardResult{Backend: be.name, Policy: pol})
		}
	}
	i := 0
	for _, be := range []*tools.Tools{inspect, inspect, loc, loc, inspectKept, inspectKept, locKept, locKept} {
		res := &out[i]
		c := ctx
		if res.Policy {
			c = guard.NewContext(ctx, g)
		}
		// One conversation (tab or page) per row, each navigated to the form
		// under its own policy, so a guarded and an unguarded call never
		// share a page.
		inv := bb.Invocation{ConversationID: fmt.Sprintf("bench-guard-%d", i)}
		nctx, cancel := context.WithTimeout(c, stepTimeout)
		_, err := be.Navigate(nctx, inv, tools.NavigateInput{URL: w.Fix.URL(PageForm)})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("guard cost: %s policy=%v: navigate: %w", res.Backend, res.Policy, err)
		}
		rows = append(rows, row{res, be, inv, c})
		i++
	}
	defer func() {
		for _, r := range rows {
			cctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
			_, _ = r.tl.Close(cctx, r.inv, tools.ReleaseInput{})
			cancel()
		}
	}()
	order := newRounds(len(rows))
	for n := 0; n < warmup+rounds; n++ {
		for _, k := range order.next() {
			r := rows[k]
			cctx, cancel := context.WithTimeout(r.ctx, stepTimeout)
			t0 := time.Now()
			_, err := r.tl.Extract(cctx, r.inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}})
			d := time.Since(t0)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("guard cost: %s policy=%v: extract: %w", r.res.Backend, r.res.Policy, err)
			}
			if n >= warmup {
				r.res.D = append(r.res.D, d)
			}
		}
	}
	return out, nil
}
