package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	bb "github.com/browserchain/browserchain/browserbackend"
	"github.com/browserchain/browserchain/browserbackend/recorder"
	"github.com/browserchain/browserchain/browserbackend/tools"
	"github.com/browserchain/browserchain/eventhub/wire"
	"github.com/browserchain/browserchain/local"
)

// ToolSteps are the steps of the in-process tool scenario, in order: the
// MCP scenario's (§8) through tools.Tools directly.
var ToolSteps = []string{StepNavigate, StepSnapshot, StepType, StepClick, StepExtract, StepScreenshot, StepArticle, StepBig}

// ToolScenarioResult is one backend's timings of the in-process tool
// scenario, per step (ToolSteps).
type ToolScenarioResult struct {
	Backend string
	Steps   map[string]Durations
	// Total and RecordedTotal are the timed steps' sum per round, without
	// and with the flight recorder (recorder.NewContext on every call).
	Total, RecordedTotal Durations
	// RecordedBytes and RecordedEntries measure the record of one scenario
	// run (recorder.Stats of a fresh recorder), per round.
	RecordedBytes, RecordedEntries []int
}

// MeasureToolScenario runs the MCP scenario's steps through tools.Tools in
// this process with KeepClients (as examples/mcp does) on every backend of
// the world: cdp-inspect (a Chromium of its own), local, host-bridge and the
// extension, one conversation each, the backends in an order shuffled per
// round. Navigations to the article and the large page are not timed; their
// snapshots are. Each round runs the scenario twice on each backend, without
// and with a fresh flight recorder (recorder.NewContext), in alternating
// order.
func MeasureToolScenario(ctx context.Context, w *World, rounds, warmup int) ([]ToolScenarioResult, error) {
	ch, newInspect, err := ownInspectBrowser(ctx)
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	insp := newInspect()
	defer insp.Close()
	over := func(p bb.Provider) *tools.Tools {
		return tools.New(tools.Options{Logger: discard, ScreenshotDir: ch.UserDataDir, KeepClients: true,
			Selector: bb.NewSelector(bb.Options{Logger: discard, Providers: []bb.Provider{p}})})
	}
	plain := func(conv string) bb.Invocation { return bb.Invocation{ConversationID: conv} }
	// port is the DevTools HTTP port of the browser the backend drives (0
	// for local, whose pages are each in a window of their own).
	backends := []struct {
		name  string
		tl    *tools.Tools
		inv   bb.Invocation
		port  int
		raise func(context.Context) error
	}{
		{name: GuardInspect, tl: over(insp), inv: plain("bench-tools-inspect"), port: ch.Port},
		{name: GuardLocal, tl: over(local.NewProvider(w.Local)), inv: plain("bench-tools-local")},
		{name: GuardBridge, tl: over(w.Server.Proxy.HostBridgeProvider(hostproxyProviderOpts)),
			inv: w.Server.BridgeInvocation("bench-tools-bridge"), port: w.Chromium.Port},
		{name: GuardExtension, tl: over(w.Server.Proxy.ExtensionProvider(hostproxyProviderOpts)),
			inv: w.Server.Invocation("bench-tools-ext", wire.InterfaceMacOS), port: w.Chromium.Port},
	}
	out := make([]ToolScenarioResult, len(backends))
	for i := range backends {
		be := &backends[i]
		out[i] = ToolScenarioResult{Backend: be.name, Steps: map[string]Durations{}}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
			_, _ = be.tl.Close(cctx, be.inv, tools.ReleaseInput{})
			cancel()
			be.tl.Shutdown()
		}()
		// A page in the background of a headless window gets no frames, and
		// a screenshot of it waits for one until its deadline (§8): the
		// conversation's tab is found by a URL only it has and raised before
		// each round, untimed.
		if be.port != 0 {
			mark := w.Fix.URL(PageForm) + "?tab=" + be.name
			cctx, cancel := context.WithTimeout(ctx, stepTimeout)
			_, err := be.tl.Navigate(cctx, be.inv, tools.NavigateInput{URL: mark})
			if err == nil {
				be.raise, err = raiser(cctx, be.port, mark)
			}
			cancel()
			if err != nil {
				return nil, fmt.Errorf("tool scenario: %s: the conversation's tab: %w", be.name, err)
			}
		}
	}
	order := newRounds(len(backends))
	for n := 0; n < warmup+rounds; n++ {
		for _, k := range order.next() {
			be := backends[k]
			if be.raise != nil {
				if err := be.raise(ctx); err != nil {
					return nil, fmt.Errorf("tool scenario: %s: raise the tab: %w", be.name, err)
				}
			}
			// The scenario without, then with the recorder, or the other
			// way round, alternately.
			for _, recorded := range [2]bool{n%2 == 1, n%2 == 0} {
				var rec *recorder.Recorder
				if recorded {
					rec = recorder.New(recorder.Options{})
				}
				steps, err := toolScenario(recorder.NewContext(ctx, rec), be.tl, be.inv, w.Fix)
				if err != nil {
					return nil, fmt.Errorf("tool scenario: %s (recorded %v): %w", be.name, recorded, err)
				}
				if n < warmup {
					continue
				}
				var total time.Duration
				for _, d := range steps {
					total += d
				}
				if !recorded {
					out[k].Total = append(out[k].Total, total)
					for step, d := range steps {
						out[k].Steps[step] = append(out[k].Steps[step], d)
					}
					continue
				}
				st, _ := rec.Stats(be.inv.ConversationID)
				out[k].RecordedTotal = append(out[k].RecordedTotal, total)
				out[k].RecordedBytes = append(out[k].RecordedBytes, st.Bytes)
				out[k].RecordedEntries = append(out[k].RecordedEntries, st.Entries)
			}
		}
	}
	return out, nil
}

// toolScenario runs the scenario once and returns each timed step's time.
func toolScenario(ctx context.Context, tl *tools.Tools, inv bb.Invocation, fix *Fixtures) (map[string]time.Duration, error) {
	got := map[string]time.Duration{}
	timed := func(step string, f func(context.Context) error) error {
		cctx, cancel := context.WithTimeout(ctx, stepTimeout)
		defer cancel()
		t0 := time.Now()
		err := f(cctx)
		got[step] = time.Since(t0)
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		return nil
	}
	navigate := func(path string) func(context.Context) error {
		return func(c context.Context) error {
			_, err := tl.Navigate(c, inv, tools.NavigateInput{URL: fix.URL(path)})
			return err
		}
	}
	var snap tools.SnapshotResult
	snapshot := func(c context.Context) (err error) {
		snap, err = tl.Read().Snapshot(c, inv, tools.SnapshotInput{})
		return err
	}
	ref := func(role, name string) (string, error) {
		for _, n := range snap.Nodes {
			if n.Role == role && n.Name == name && n.Ref != "" {
				return n.Ref, nil
			}
		}
		return "", fmt.Errorf("no %s %q in the snapshot", role, name)
	}
	if err := timed(StepNavigate, navigate(PageForm)); err != nil {
		return nil, err
	}
	if err := timed(StepSnapshot, snapshot); err != nil {
		return nil, err
	}
	field, err := ref("textbox", "Display name")
	if err != nil {
		return nil, err
	}
	button, err := ref("button", "Apply")
	if err != nil {
		return nil, err
	}
	steps := []struct {
		step string
		f    func(context.Context) error
	}{
		{StepType, func(c context.Context) error {
			_, err := tl.Act().Type(c, inv, tools.TypeInput{Target: tools.Target{Ref: field}, Text: FormText})
			return err
		}},
		{StepClick, func(c context.Context) error {
			_, err := tl.Act().Click(c, inv, tools.ElementInput{Target: tools.Target{Ref: button}})
			return err
		}},
		{StepExtract, func(c context.Context) error {
			res, err := tl.Read().Extract(c, inv, tools.ExtractInput{Target: tools.Target{Selector: "#out"}})
			if err == nil && !strings.Contains(res.Text, FormResult) {
				err = fmt.Errorf("the page shows %q, not %q", res.Text, FormResult)
			}
			return err
		}},
		{StepScreenshot, func(c context.Context) error {
			_, err := tl.Read().Screenshot(c, inv, tools.ScreenshotInput{})
			return err
		}},
	}
	for _, s := range steps {
		if err := timed(s.step, s.f); err != nil {
			return nil, err
		}
	}
	for _, pg := range []struct{ path, step string }{{PageArticle, StepArticle}, {PageBig, StepBig}} {
		cctx, cancel := context.WithTimeout(ctx, stepTimeout)
		err := navigate(pg.path)(cctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("navigate %s: %w", pg.path, err)
		}
		if err := timed(pg.step, snapshot); err != nil {
			return nil, err
		}
	}
	return got, nil
}

func (r *Results) renderToolScenario(p func(string, ...any)) {
	if len(r.ToolScenario) == 0 {
		return
	}
	n := 0
	for _, d := range r.ToolScenario[0].Steps {
		n = len(d)
	}
	p("## 12. The tool scenario in process, every backend\n\n")
	p("§8's scenario through `tools.Tools` in this process with `KeepClients` (as examples/mcp runs it), no MCP "+
		"server in between: cdp-inspect on a Chromium of its own, local, host-bridge through the world's desktop "+
		"bridge and the extension through the reference extension, one conversation each; %d rounds after warm-up, "+
		"the backends in an order shuffled per round. The navigations to the article and the large page are not "+
		"timed. Each cell is the median, with the p99 in brackets.\n\n", n)
	p("| step |")
	for _, b := range r.ToolScenario {
		p(" %s |", b.Backend)
	}
	p("\n|---|")
	for range r.ToolScenario {
		p("---|")
	}
	p("\n")
	for _, step := range ToolSteps {
		p("| %s |", step)
		for _, b := range r.ToolScenario {
			d := b.Steps[step]
			if len(d) == 0 {
				p(" n/a |")
				continue
			}
			p(" %s (%s) |", ms(d.Median()), ms(d.P99()))
		}
		p("\n")
	}
	p("\n")
	r.renderRecorderCost(p)
}

// renderRecorderCost is the flight recorder's share of §12: the same
// scenario with recorder.NewContext on every call, in the same rounds.
func (r *Results) renderRecorderCost(p func(string, ...any)) {
	if len(r.ToolScenario) == 0 || len(r.ToolScenario[0].RecordedTotal) == 0 {
		return
	}
	p("The flight recorder (`browserbackend/recorder`, no spans): each round also runs the scenario with a fresh " +
		"recorder on every call (the two runs in alternating order). Each cell is the median of the timed steps' " +
		"sum per round; the memory is what one scenario run's record holds (`Stats.Bytes`, screenshots included).\n\n")
	p("| backend | recorder off | recorder on | on / off (target ≤ %.2f) | cost | memory per recorded conversation | entries |\n|---|---|---|---|---|---|---|\n", RecorderCostTarget)
	for _, b := range r.ToolScenario {
		off, on := b.Total.Median(), b.RecordedTotal.Median()
		cost := 0.0
		if off > 0 {
			cost = 100 * float64(on-off) / float64(off)
		}
		p("| %s | %s | %s | %s | %+.1f %% | %s | %d |\n", b.Backend, ms(off), ms(on), ratio(float64(on), float64(off)), cost,
			mib(float64(medianInt(b.RecordedBytes))), medianInt(b.RecordedEntries))
	}
	p("\n")
}

// RecorderCostTarget bounds the tool scenario's median with the flight
// recorder on, as a multiple of the median with it off.
const RecorderCostTarget = 1.03

// recorderTargets are §12's recorder cost targets, one per backend.
func (r *Results) recorderTargets() []Target {
	var ts []Target
	for _, b := range r.ToolScenario {
		off, on := b.Total.Median(), b.RecordedTotal.Median()
		if off <= 0 || on <= 0 {
			continue
		}
		q := float64(on) / float64(off)
		ts = append(ts, Target{fmt.Sprintf("tool scenario on %s with the flight recorder ≤ %.2f × without (§12)", b.Backend, RecorderCostTarget),
			fmt.Sprintf("%s vs %s = ×%.3f; %s per recorded conversation", ms(on), ms(off), q, mib(float64(medianInt(b.RecordedBytes)))),
			q <= RecorderCostTarget, false})
	}
	return ts
}

func medianInt(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
