// Command benchreport measures browserchain's backends side by side on one
// machine, in one run, and writes BENCHMARKS.md:
//
//  1. the Runtime.evaluate round trip over a raw CDP WebSocket, cdp-inspect,
//     chromedp, host-bridge, the extension and local, and through the
//     Selector/Client;
//  2. Page.captureScreenshot of ≈1.5 MB and ≈8 MB per backend (time, memory);
//  3. failover cost (refused, blackholed, cooled-down first candidate);
//  4. cold start per backend and warm second invocations;
//  5. event-hub throughput to 1/10/100 SSE subscribers and memory while one
//     subscriber stalls;
//  6. the guards' cost per tool call, with and without a policy;
//  7. the same browser scenario through examples/mcp, Chrome DevTools MCP and
//     Playwright MCP on one Chromium;
//  8. scale: 1,000 conversations at once over 100 simulated extension
//     clients, and a few on one local Chromium;
//  9. toolcall: a tool call over the ordinary cdp-inspect path next to a raw
//     CDP command, in a quiet and in a busy browser;
//  10. tools: the MCP scenario through the in-process tools on every backend.
//
// Run it from the repository with `make bench` (which runs scripts/setup.sh
// first), or `cd bench && go run ./cmd/benchreport`. It needs Chromium, Node.js
// and the Playwright driver that scripts/setup.sh installs. -quick takes
// few samples (a smoke test of the harness, about a minute).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/browserchain/browserchain/bench/harness"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// counts are the sample counts of one run.
type counts struct {
	rounds, warmup   int
	shotSmall, shotL int
	fail, failBlack  int
	cold             harness.ColdCounts
	hub              map[int]int // subscribers → events
	stallEvents      int
	worker           int
	// distRounds, distShots, distConv: the distributed hub phase.
	distRounds, distShots, distConv int
	guard                           int
	mcp                             harness.MCPOptions
	scale                           harness.ScaleOptions
	tool, toolWarmup                int
	scenario                        int
}

var full = counts{
	rounds: 1000, warmup: 50,
	shotSmall: 12, shotL: 6,
	fail: 60, failBlack: 10,
	cold:        harness.ColdCounts{Fast: 15, Bridge: 8, Extension: 3, Local: 3},
	hub:         map[int]int{1: 20000, 10: 5000, 100: 1000},
	stallEvents: 20000,
	worker:      300,
	distRounds:  1000, distShots: 10, distConv: 50,
	guard: 200,
	mcp:   harness.MCPOptions{Rounds: 10, Warmup: 1, Cold: 3},
	scale: harness.ScaleOptions{Clients: 100, Conversations: 1000, Rounds: 20, LocalConversations: 16, LocalRounds: 50},
	tool:  300, toolWarmup: 20,
	scenario: 10,
}

var quick = counts{
	rounds: 100, warmup: 10,
	shotSmall: 2, shotL: 2,
	fail: 10, failBlack: 3,
	cold:        harness.ColdCounts{Fast: 3, Bridge: 2, Extension: 1, Local: 1},
	hub:         map[int]int{1: 2000, 10: 500, 100: 100},
	stallEvents: 4000,
	worker:      30,
	distRounds:  100, distShots: 2, distConv: 5,
	guard: 20,
	mcp:   harness.MCPOptions{Rounds: 2, Warmup: 1, Cold: 2},
	scale: harness.ScaleOptions{Clients: 20, Conversations: 100, Rounds: 5, LocalConversations: 4, LocalRounds: 5},
	tool:  30, toolWarmup: 5,
	scenario: 2,
}

// findRoot walks up from the working directory to the repository root (the
// directory holding examples/extension/manifest.json).
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "examples", "extension", "manifest.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (examples/extension/manifest.json); use -root")
		}
		dir = parent
	}
}

func run() error {
	root := flag.String("root", "", "repository root (default: found upward from the working directory)")
	out := flag.String("out", "", "report file (default <root>/BENCHMARKS.md)")
	profiles := flag.String("profile-dir", "", "directory for per-phase CPU profiles (default <root>/bench/out)")
	isQuick := flag.Bool("quick", false, "few samples: a smoke test of the harness, not a report to keep")
	from := flag.String("from", "", "re-render the report from a results.json of an earlier run (no measuring); the analysis is read again")
	only := flag.String("phases", "", "comma-separated phases to run (evaluate,worker,screenshot,failover,coldstart,guard,tools,hub,distributed,mcp,mcptools,scale,transport,toolcall); default all")
	flag.Parse()
	if *root == "" {
		r, err := findRoot()
		if err != nil {
			return err
		}
		*root = r
	}
	if *out == "" {
		*out = filepath.Join(*root, "BENCHMARKS.md")
	}
	if *profiles == "" {
		*profiles = filepath.Join(*root, "bench", "out")
	}
	n := full
	if *isQuick {
		n = quick
	}
	harness.Progress = func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s benchreport: "+f+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	if err := os.MkdirAll(*profiles, 0o755); err != nil {
		return err
	}

	if *from != "" {
		data, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		var res harness.Results
		if err := json.Unmarshal(data, &res); err != nil {
			return fmt.Errorf("%s: %w", *from, err)
		}
		return write(&res, *root, *out)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := &harness.Results{Started: time.Now()}
	selected := map[string]bool{}
	for _, p := range strings.Split(*only, ",") {
		if p = strings.TrimSpace(p); p != "" {
			selected[p] = true
		}
	}
	phase := func(name string, f func() error) error {
		if len(selected) > 0 && !selected[name] {
			return nil
		}
		harness.Progress("phase %s", name)
		file := filepath.Join(*profiles, name+".pprof")
		pf, err := os.Create(file)
		if err == nil {
			if pprof.StartCPUProfile(pf) == nil {
				defer func() {
					pprof.StopCPUProfile()
					pf.Close()
					rel, _ := filepath.Rel(*root, file)
					res.Profiles = append(res.Profiles, "`"+rel+"`")
				}()
			} else {
				pf.Close()
			}
		}
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		// Allocation profile (cumulative since the start of the run; read
		// with -sample_index=alloc_space and compare phases).
		if af, err := os.Create(filepath.Join(*profiles, name+".allocs.pprof")); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(af, 0)
			af.Close()
		}
		return ctx.Err()
	}

	loadStart := harness.LoadAvg()
	// The world (one Chromium with the extension, the bridge, local) serves
	// the first phases only; a run of the other phases alone skips it.
	needWorld := len(selected) == 0
	for _, p := range []string{"evaluate", "worker", "screenshot", "failover", "coldstart", "guard", "tools"} {
		needWorld = needWorld || selected[p]
	}
	w := &harness.World{Root: *root}
	var err error
	if needWorld {
		harness.Progress("starting browsers, server, extension, bridge, local (root %s)", *root)
		if w, err = harness.NewWorld(ctx, *root); err != nil {
			return err
		}
	}
	defer w.Close()
	res.Machine = harness.DescribeMachine(ctx, w)
	res.Machine.LoadStart = loadStart

	err = phase("evaluate", func() (err error) {
		// The extension without the result socket (the "before" of the
		// transport fix) joins this phase only.
		if p, perr := w.StartFetchOnly(ctx); perr != nil {
			harness.Progress("fetch-only extension skipped: %v", perr)
		} else {
			w.Paths = append(w.Paths, p)
		}
		defer w.CloseFetchOnly()
		res.Eval, err = harness.MeasureEvaluate(ctx, w, n.rounds, n.warmup)
		return err
	})
	if err == nil {
		err = phase("worker", func() (err error) {
			res.Worker, err = harness.MeasureWorker(ctx, w, n.worker)
			return err
		})
	}
	if err == nil {
		err = phase("screenshot", func() (err error) {
			res.Shots, err = harness.MeasureScreenshots(ctx, w, map[string]int{
				harness.ShotSizes[0].Label: n.shotSmall, harness.ShotSizes[1].Label: n.shotL})
			return err
		})
	}
	if err == nil {
		err = phase("failover", func() (err error) {
			res.Failover, err = harness.MeasureFailover(ctx, w, n.fail, n.failBlack)
			return err
		})
	}
	if err == nil {
		err = phase("coldstart", func() (err error) {
			res.Cold, err = harness.MeasureColdStart(ctx, w, n.cold)
			return err
		})
	}
	if err == nil {
		err = phase("guard", func() (err error) {
			res.Guard, err = harness.MeasureGuardCost(ctx, w, n.guard, n.guard/10)
			return err
		})
	}
	if err == nil {
		err = phase("tools", func() (err error) {
			res.ToolScenario, err = harness.MeasureToolScenario(ctx, w, n.scenario, 2)
			return err
		})
	}
	w.Close()
	if err != nil {
		return err
	}
	// The world is closed: the three MCP servers run on a fresh Chromium of
	// each phase's own, with the fixture pages only.
	mcpPhase := func(measure func(context.Context, *harness.Fixtures, harness.MCPOptions) ([]harness.MCPResult, error), out *[]harness.MCPResult) func() error {
		return func() error {
			fix, err := harness.StartFixtures()
			if err != nil {
				return err
			}
			defer fix.Close()
			o := n.mcp
			o.Root = *root
			*out, err = measure(ctx, fix, o)
			return err
		}
	}
	err = phase("mcp", mcpPhase(harness.MeasureMCP, &res.MCP))
	if err != nil {
		return err
	}
	err = phase("mcptools", mcpPhase(harness.MeasureMCPNewTools, &res.MCPNewTools))
	if err != nil {
		return err
	}
	err = phase("hub", func() error {
		// The stall first, while the process holds nothing else.
		harness.Progress("hub: stalled subscriber")
		var err error
		if res.Stall, err = harness.MeasureHubStall(ctx, n.stallEvents, 8192); err != nil {
			return err
		}
		for _, subs := range []int{1, 10, 100} {
			harness.Progress("hub: %d subscribers", subs)
			h, err := harness.MeasureHubThroughput(ctx, subs, n.hub[subs])
			if err != nil {
				return err
			}
			res.Hub = append(res.Hub, h)
		}
		return nil
	})
	if err == nil {
		err = phase("distributed", func() error {
			d, err := harness.MeasureDistributed(ctx, n.distRounds, n.distShots, n.distConv)
			res.Distributed = &d
			return err
		})
	}
	if err == nil {
		err = phase("scale", func() error {
			sc, err := harness.MeasureScale(ctx, n.scale)
			res.Scale = &sc
			if err != nil {
				return err
			}
			return sc.Err()
		})
	}
	if err == nil {
		err = phase("transport", func() error {
			// Three browsers of its own, one per extension transport. A
			// failure leaves the section out rather than the whole report.
			t, terr := harness.MeasureTransport(ctx, *root, n.rounds, n.warmup)
			if terr != nil {
				harness.Progress("transport phase skipped: %v", terr)
				return nil
			}
			res.Transport = t
			return nil
		})
	}
	if err == nil {
		err = phase("toolcall", func() error {
			fix, err := harness.StartFixtures()
			if err != nil {
				return err
			}
			defer fix.Close()
			res.ToolCall, err = harness.MeasureToolCall(ctx, fix, n.tool, n.toolWarmup)
			return err
		})
	}
	if err != nil {
		return err
	}
	res.Machine.LoadEnd = harness.LoadAvg()
	res.Took = time.Since(res.Started)
	if data, err := json.MarshalIndent(res, "", " "); err == nil {
		_ = os.WriteFile(filepath.Join(*profiles, "results.json"), data, 0o644)
	}
	if err := write(res, *root, *out); err != nil {
		return err
	}
	harness.Progress("wrote %s in %s (raw results: %s)", *out, res.Took.Round(time.Second), filepath.Join(*profiles, "results.json"))
	for _, t := range res.Targets() {
		fmt.Fprintf(os.Stderr, "  [%s] %s: %s\n", strings.Trim(t.Verdict(), "*"), t.Goal, t.Measured)
	}
	return nil
}

// write renders res (with the current bench/ANALYSIS.md) to out.
func write(res *harness.Results, root, out string) error {
	res.Analysis = ""
	if a, err := os.ReadFile(filepath.Join(root, "bench", "ANALYSIS.md")); err == nil {
		res.Analysis = string(a)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	res.Render(f)
	return f.Close()
}
