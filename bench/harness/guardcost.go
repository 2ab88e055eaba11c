package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/guard"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
	"github.com/browserchain/browserchain/eventhub/wire"
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
	// The user's own Chrome through the world's desktop bridge and the
	// reference extension, a Client per call.
	GuardBridge    = "host-bridge"
	GuardExtension = "extension"
)

// GuardUserTabs is how many further tabs (the user's, on the article page)
// the guard phase opens in each browser it measures on.
const GuardUserTabs = 10

// openUserTabs opens n tabs on pageURL in the browser at wsURL; the function
// it returns closes them (best effort, bounded by stepTimeout).
func openUserTabs(ctx context.Context, wsURL, pageURL string, n int) (func(), error) {
	r, err := DialRaw(ctx, wsURL)
	if err != nil {
		return nil, err
	}
	var ids []string
	closeAll := func() {
		cctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		defer cancel()
		for _, id := range ids {
			p, _ := json.Marshal(map[string]string{"targetId": id})
			_, _ = r.Call(cctx, "", "Target.closeTarget", p)
		}
		r.Close()
	}
	p, _ := json.Marshal(map[string]string{"url": pageURL})
	for range n {
		res, err := r.Call(ctx, "", "Target.createTarget", p)
		if err != nil {
			closeAll()
			return nil, err
		}
		var ct struct{ TargetID string }
		_ = json.Unmarshal(res, &ct)
		ids = append(ids, ct.TargetID)
	}
	return closeAll, nil
}

// ownInspectBrowser starts a Chromium of its own and returns it with a
// function that makes a cdp-inspect provider for it (each closed by the
// caller, before the browser).
func ownInspectBrowser(ctx context.Context) (*Chromium, func() *cdpinspect.Provider, error) {
	ch, err := StartChromium(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	cfg := InspectConfig()
	cfg.Host, cfg.Port = "127.0.0.1", ch.Port
	return ch, func() *cdpinspect.Provider {
		return cdpinspect.NewProvider(cfg, cdpinspect.WithWebSocketURL(ch.WSURL), cdpinspect.WithUserDataDirs(), cdpinspect.WithLogger(discard))
	}, nil
}

// MeasureGuardCost times one extract tool call (`h1` of the form page) on
// cdp-inspect (a headless Chromium of its own), local (the world's Playwright
// browser), and the world's host-bridge and extension, each with no policy and with an allow-list policy for the
// fixture host (the guard's before/after URL checks, the Fetch
// interception of documents), rounds times each, the four paths interleaved
// in a shuffled order per round after warmup rounds, with GuardUserTabs
// further tabs open in each browser.
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
	ch, newInspect, err := ownInspectBrowser(ctx)
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	var provs []*cdpinspect.Provider
	defer func() {
		for _, p := range provs {
			p.Close()
		}
	}()
	inspectTools := func(keep bool) *tools.Tools {
		p := newInspect()
		provs = append(provs, p)
		return tools.New(tools.Options{Logger: discard, ScreenshotDir: ch.UserDataDir, KeepClients: keep,
			Selector: bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{p}})})
	}
	localTools := func(keep bool) *tools.Tools {
		return tools.New(tools.Options{Logger: discard, ScreenshotDir: ch.UserDataDir, KeepClients: keep,
			Selector: bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{local.NewProvider(w.Local)}})})
	}
	hubTools := func(p bb.Provider) *tools.Tools {
		return tools.New(tools.Options{Logger: discard, ScreenshotDir: ch.UserDataDir,
			Selector: bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{p}})})
	}
	inspectKept, locKept := inspectTools(true), localTools(true)
	defer inspectKept.Shutdown()
	defer locKept.Shutdown()
	plain := func(conv string) bb.Invocation { return bb.Invocation{ConversationID: conv} }
	backends := []struct {
		name string
		tl   *tools.Tools
		inv  func(conv string) bb.Invocation
	}{
		{GuardInspect, inspectTools(false), plain},
		{GuardLocal, localTools(false), plain},
		{GuardBridge, hubTools(w.Server.Proxy.HostBridgeProvider(hostproxyProviderOpts)), w.Server.BridgeInvocation},
		{GuardExtension, hubTools(w.Server.Proxy.ExtensionProvider(hostproxyProviderOpts)),
			func(conv string) bb.Invocation { return w.Server.Invocation(conv, wire.InterfaceMacOS) }},
		{GuardInspectKept, inspectKept, plain},
		{GuardLocalKept, locKept, plain},
	}
	type row struct {
		res *GuardResult
		tl  *tools.Tools
		inv bb.Invocation
		ctx context.Context
	}
	var rows []row
	out := make([]GuardResult, 0, 2*len(backends))
	for _, be := range backends {
		for _, pol := range []bool{false, true} {
			out = append(out, GuardResult{Backend: be.name, Policy: pol})
		}
	}
	for i := range out {
		res, be := &out[i], backends[i/2]
		c := ctx
		if res.Policy {
			c = guard.NewContext(ctx, g)
		}
		// One conversation (tab or page) per row, each navigated to the form
		// under its own policy, so a guarded and an unguarded call never
		// share a page.
		inv := be.inv(fmt.Sprintf("bench-guard-%d", i))
		nctx, cancel := context.WithTimeout(c, stepTimeout)
		_, err := be.tl.Navigate(nctx, inv, tools.NavigateInput{URL: w.Fix.URL(PageForm)})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("guard cost: %s policy=%v: navigate: %w", res.Backend, res.Policy, err)
		}
		rows = append(rows, row{res, be.tl, inv, c})
	}
	// The user's tabs, opened once every row has its own page (the
	// bridge's is the first page it finds): the popup hold auto-attaches
	// every open tab, so its cost would otherwise depend on what earlier
	// phases left open.
	for _, wsURL := range []string{w.Chromium.WSURL, ch.WSURL} {
		closeTabs, err := openUserTabs(ctx, wsURL, w.Fix.URL(PageArticle), GuardUserTabs)
		if err != nil {
			return nil, fmt.Errorf("guard cost: the user's tabs: %w", err)
		}
		defer closeTabs()
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
			_, err := r.tl.Read().Extract(cctx, r.inv, tools.ExtractInput{Target: tools.Target{Selector: "h1"}})
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
