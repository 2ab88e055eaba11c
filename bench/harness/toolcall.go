package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/cdpinspect"
)

// ToolCallResult is the tool-call phase: one small tool call
// over the ordinary path (tools.Tools + a Selector with the cdp-inspect
// provider, a Client per call) next to a raw CDP command on the same
// browser, in a quiet browser and in a busy one.
type ToolCallResult struct {
	Rows []ToolCallRow
	// Expression says what the raw and the Client rows evaluate.
	Expression string
}

// ToolCallRow is one path in one browser.
type ToolCallRow struct {
	Browser string // ToolQuiet or ToolBusy
	Path    string // one of the ToolPath… names
	D       Durations
}

// The browsers and paths of the tool-call phase.
const (
	ToolQuiet = "quiet (one tab)"
	ToolBusy  = "busy (4 windows, 6 tabs, a 5,000-element page, another CDP client attached)"

	ToolPathRaw    = "raw CDP WebSocket, `Runtime.evaluate`"
	ToolPathClient = "Selector Client per call, `Runtime.evaluate` (shared cdp-inspect socket)"
	ToolPathTool   = "`tools.Extract` over the ordinary path (shared cdp-inspect socket)"
	ToolPathRedial = "`tools.Extract`, socket closed after every call (as before the shared connection)"
)

// conversationTab returns the target id of the tab the cdp-inspect
// conversation of inv works in ("" when it cannot be found: the attach
// then fails).
func conversationTab(ctx context.Context, sel *bb.Selector, inv bb.Invocation) string {
	c := sel.Client(inv)
	defer c.Close()
	if _, err := c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: json.RawMessage(`{"expression":"1"}`)}); err != nil {
		return ""
	}
	if b, ok := c.Backend().(*cdpinspect.Backend); ok {
		return b.TargetID()
	}
	return ""
}

// MeasureToolCall times, interleaved in shuffled order per round, rounds
// times after warmup rounds, in two Chromiums of its own (quiet and busy):
// a raw Runtime.evaluate, the same through a per-call Selector Client,
// tools.Extract of the page over the ordinary path, and tools.Extract with a
// provider that closes its socket after each call.
func MeasureToolCall(ctx context.Context, fix *Fixtures, rounds, warmup int) (*ToolCallResult, error) {
	res := &ToolCallResult{Expression: "the extract tool's own expression (tools.ExtractExpression)"}
	type path struct {
		row *ToolCallRow
		run func(ctx context.Context) error
	}
	var paths []path
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	params, _ := json.Marshal(map[string]any{"expression": tools.ExtractExpression(tools.DefaultExtractMaxChars), "returnByValue": true})
	for _, name := range []string{ToolQuiet, ToolBusy} {
		ch, err := StartChromium(ctx, "")
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, ch.Close)
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		err = setUpToolBrowser(sctx, ch, fix, name == ToolBusy, &cleanups)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("tool call: %s: %w", name, err)
		}
		raw, err := DialRaw(ctx, ch.WSURL)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, raw.Close)
		cfg := InspectConfig()
		cfg.Host, cfg.Port = "127.0.0.1", ch.Port
		provider := func(opts ...cdpinspect.Option) *cdpinspect.Provider {
			p := cdpinspect.NewProvider(cfg, append([]cdpinspect.Option{cdpinspect.WithWebSocketURL(ch.WSURL),
				cdpinspect.WithUserDataDirs(), cdpinspect.WithLogger(discard)}, opts...)...)
			cleanups = append(cleanups, func() { p.Close() })
			return p
		}
		mkTools := func(p *cdpinspect.Provider) *tools.Tools {
			return tools.New(tools.Options{Logger: discard, ScreenshotDir: ch.UserDataDir,
				Selector: bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{p}})})
		}
		shared, redial := provider(), provider(cdpinspect.WithIdleTimeout(-1))
		sharedTools, redialTools := mkTools(shared), mkTools(redial)
		sel := sharedTools.Selector()
		inv := func(conv string) bb.Invocation { return bb.Invocation{ConversationID: conv} }
		for _, t := range []struct {
			tl   *tools.Tools
			conv string
		}{{sharedTools, "bench-tool"}, {redialTools, "bench-redial"}} {
			nctx, cancel := context.WithTimeout(ctx, stepTimeout)
			_, err := t.tl.Navigate(nctx, inv(t.conv), tools.NavigateInput{URL: fix.URL(PageForm)})
			cancel()
			if err != nil {
				return nil, fmt.Errorf("tool call: %s: navigate: %w", name, err)
			}
		}
		// The raw session is on the conversation's own tab: the same page,
		// the same renderer, the same command.
		if err := raw.Attach(ctx, conversationTab(ctx, sel, inv("bench-tool"))); err != nil {
			return nil, err
		}
		add := func(p string, run func(ctx context.Context) error) {
			res.Rows = append(res.Rows, ToolCallRow{Browser: name, Path: p})
			paths = append(paths, path{run: run})
		}
		add(ToolPathRaw, func(ctx context.Context) error { _, err := raw.Send(ctx, "Runtime.evaluate", params); return err })
		add(ToolPathClient, func(ctx context.Context) error {
			c := sel.Client(inv("bench-tool"))
			defer c.Close()
			_, err := c.Send(ctx, bb.Command{Method: "Runtime.evaluate", Params: params})
			return err
		})
		add(ToolPathTool, func(ctx context.Context) error {
			_, err := sharedTools.Read().Extract(ctx, inv("bench-tool"), tools.ExtractInput{})
			return err
		})
		add(ToolPathRedial, func(ctx context.Context) error {
			_, err := redialTools.Read().Extract(ctx, inv("bench-redial"), tools.ExtractInput{})
			return err
		})
	}
	for i := range paths {
		paths[i].row = &res.Rows[i]
	}
	order := newRounds(len(paths))
	for n := 0; n < warmup+rounds; n++ {
		for _, k := range order.next() {
			p := paths[k]
			cctx, cancel := context.WithTimeout(ctx, stepTimeout)
			t0 := time.Now()
			err := p.run(cctx)
			d := time.Since(t0)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("tool call: %s, %s: %w", p.row.Browser, p.row.Path, err)
			}
			if n >= warmup {
				p.row.D = append(p.row.D, d)
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return res, nil
}

// setUpToolBrowser gives a busy browser what a user's Chrome has: several
// windows with tabs (one on a 5,000-element page, which was loaded last),
// and another automation client attached to a tab with its domains on.
func setUpToolBrowser(ctx context.Context, ch *Chromium, fix *Fixtures, busy bool, cleanups *[]func()) error {
	if !busy {
		return nil
	}
	other, err := DialRaw(ctx, ch.WSURL)
	if err != nil {
		return err
	}
	*cleanups = append(*cleanups, other.Close)
	for i, u := range []string{PageArticle, PageForm, PageArticle, PageForm, PageBig} {
		p, _ := json.Marshal(map[string]any{"url": fix.URL(u), "newWindow": i%2 == 0})
		if _, err := other.Call(ctx, "", "Target.createTarget", p); err != nil {
			return err
		}
	}
	if err := other.AttachFirstPage(ctx); err != nil {
		return err
	}
	for _, m := range []string{"Page.enable", "Runtime.enable", "Network.enable", "DOM.enable"} {
		if _, err := other.Send(ctx, m, nil); err != nil {
			return err
		}
	}
	_, err = other.Call(ctx, "", "Target.setDiscoverTargets", json.RawMessage(`{"discover":true}`))
	return err
}

// row returns the tool-call row of browser and path, nil when absent.
func (t *ToolCallResult) row(browser, path string) *ToolCallRow {
	for i := range t.Rows {
		if t.Rows[i].Browser == browser && t.Rows[i].Path == path {
			return &t.Rows[i]
		}
	}
	return nil
}

// toolCallTargets: a tool call over the ordinary path adds ≤ 0.5 ms over a
// raw command on the same browser, quiet and busy.
func (r *Results) toolCallTargets() []Target {
	t := r.ToolCall
	if t == nil {
		return nil
	}
	var ts []Target
	for _, b := range []string{ToolQuiet, ToolBusy} {
		raw, tool := t.row(b, ToolPathRaw), t.row(b, ToolPathTool)
		if raw == nil || tool == nil || len(raw.D) == 0 || len(tool.D) == 0 {
			continue
		}
		dd := tool.D.Median() - raw.D.Median()
		ts = append(ts, Target{"a tool call over the ordinary cdp-inspect path ≤ raw CDP + 0.5 ms median, " + b,
			fmt.Sprintf("%s vs %s = %+.3f ms (×%.2f)", ms(tool.D.Median()), ms(raw.D.Median()), msOf(dd),
				float64(tool.D.Median())/float64(raw.D.Median())), dd <= 500*time.Microsecond, false})
	}
	return ts
}

// renderToolCall writes the tool-call section.
func (r *Results) renderToolCall(p func(string, ...any)) {
	t := r.ToolCall
	if t == nil || len(t.Rows) == 0 {
		return
	}
	p("## 11. A tool call over the ordinary path vs a raw CDP command\n\n")
	p("`tools.Tools` with a Selector over the cdp-inspect provider and a Client per call (no `KeepClients`): "+
		"`Extract` of the whole form page (one `Runtime.evaluate` of the tool's function). Raw and Client rows "+
		"send the same command (%s) on the same tab, the raw one on a flat session of its own. Two Chromiums of their own, all paths of both interleaved in a shuffled "+
		"order per round, %d rounds after warm-up. The busy browser has 4 windows and 6 tabs, the last loaded "+
		"on a 5,000-element page, and another raw CDP client attached to a tab with Page, Runtime, Network and "+
		"DOM enabled and target discovery on.\n\n", t.Expression, len(t.Rows[0].D))
	p("| browser | path | median | p99 | median vs raw | Δ median vs raw |\n|---|---|---|---|---|---|\n")
	for _, row := range t.Rows {
		raw := t.row(row.Browser, ToolPathRaw)
		if raw == nil || len(raw.D) == 0 || len(row.D) == 0 {
			continue
		}
		p("| %s | %s | %s | %s | %s | %+.3f ms |\n", row.Browser, row.Path, ms(row.D.Median()), ms(row.D.P99()),
			ratio(float64(row.D.Median()), float64(raw.D.Median())), msOf(row.D.Median()-raw.D.Median()))
	}
	p("\n")
}
