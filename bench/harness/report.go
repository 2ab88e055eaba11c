package harness

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Results is everything one run measured.
type Results struct {
	Started  time.Time
	Took     time.Duration
	Machine  Machine
	Eval     []EvalResult
	Shots    []ShotResult
	Failover []FailoverResult
	Cold     []ColdResult
	Hub      []HubThroughput
	Stall    HubStall
	Worker   WorkerProbe
	// Distributed is the NATS hub phase (nil when not run).
	Distributed *DistributedResult `json:",omitempty"`
	Guard       []GuardResult
	MCP         []MCPResult
	// MCPNewTools is §8's new tools per server (the mcptools phase).
	MCPNewTools []MCPResult `json:",omitempty"`
	// Scale is the scale phase (nil when not run).
	Scale *ScaleResult `json:",omitempty"`
	// Transport is the extension transport phase (§10).
	Transport []TransportResult `json:",omitempty"`
	// ToolScenario is the in-process tool scenario per backend.
	ToolScenario []ToolScenarioResult `json:",omitempty"`
	// ToolCall is the tool-call phase (nil when not run).
	ToolCall *ToolCallResult `json:",omitempty"`
	// Analysis is appended verbatim (bench/ANALYSIS.md).
	Analysis string
	// Profiles lists the pprof files written by this run.
	Profiles []string
}

// Target is one benchmark goal with its measured value.
type Target struct {
	Goal     string
	Measured string
	Met      bool
	// Ref marks a row that is not a target of its own but the same figure
	// measured another way for comparison (the extension before its fix).
	Ref bool
}

// Verdict is the result column: "met", "**missed**", or for a Ref row
// "for comparison (over the target)" / "for comparison (within the target)".
func (t Target) Verdict() string {
	switch {
	case t.Ref && t.Met:
		return "for comparison (within the target)"
	case t.Ref:
		return "for comparison (over the target)"
	case t.Met:
		return "met"
	}
	return "**missed**"
}

func (r *Results) eval(name string) *EvalResult {
	for i := range r.Eval {
		if r.Eval[i].Name == name {
			return &r.Eval[i]
		}
	}
	return nil
}

func (r *Results) failover(name string) *FailoverResult {
	for i := range r.Failover {
		if r.Failover[i].Scenario == name {
			return &r.Failover[i]
		}
	}
	return nil
}

func (r *Results) cold(name string) *ColdResult {
	for i := range r.Cold {
		if r.Cold[i].Name == name {
			return &r.Cold[i]
		}
	}
	return nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// StallGrowth returns the heap growth over the second half of the run (from
// the 50 % checkpoint to the largest later one, after the replay ring and the
// stalled subscriber's queue have filled) and that growth as a share of the
// bytes published in the second half (1.0 would be a hub that keeps
// everything), plus the lowest and highest checkpoint of the whole run.
func (s HubStall) StallGrowth() (growth, share, lo, hi float64) {
	if len(s.Heap) < 3 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	mid := len(s.Heap) / 2
	peak := s.Heap[mid]
	for _, h := range s.Heap[mid:] {
		peak = max(peak, h)
	}
	lo, hi = s.Heap[0], s.Heap[0]
	for _, h := range s.Heap {
		lo, hi = min(lo, h), max(hi, h)
	}
	step := float64(max(s.Events/20, 1))
	published := float64(len(s.Heap)-1-mid) * step * float64(s.PayloadBytes)
	return peak - s.Heap[mid], (peak - s.Heap[mid]) / published, lo, hi
}

// Targets evaluates the benchmark goals.
func (r *Results) Targets() []Target {
	var ts []Target
	raw, ins, bri, ext := r.eval(PathRaw), r.eval(PathInspect), r.eval(PathBridge), r.eval(PathExtension)
	if raw != nil && ins != nil {
		q := float64(ins.D.Median()) / float64(raw.D.Median())
		ts = append(ts, Target{"cdp-inspect ≤ 1.10 × raw CDP median",
			fmt.Sprintf("%s vs %s = ×%.2f", ms(ins.D.Median()), ms(raw.D.Median()), q), q <= 1.10, false})
	}
	if raw != nil && bri != nil {
		dd := bri.D.Median() - raw.D.Median()
		ts = append(ts, Target{"host-bridge ≤ raw CDP + 0.5 ms median",
			fmt.Sprintf("%s vs %s = +%s", ms(bri.D.Median()), ms(raw.D.Median()), ms(dd)), dd <= 500*time.Microsecond, false})
	}
	if ext != nil {
		o := ext.Overhead.Median()
		ts = append(ts, Target{"extension transport overhead (round trip − chrome.debugger time) ≤ 1 ms median",
			fmt.Sprintf("%s (round trip %s, chrome.debugger %s)", msf(o), ms(ext.D.Median()), msf(ext.Inside.Median())), o <= 1, false})
	}
	if pr := r.eval(PathExtensionFetch); pr != nil && len(pr.Overhead) > 0 {
		o := pr.Overhead.Median()
		ts = append(ts, Target{"… the same with every result POSTed (the extension against a server without the result socket, as before the fix)",
			fmt.Sprintf("%s (round trip %s, chrome.debugger %s)", msf(o), ms(pr.D.Median()), msf(pr.Inside.Median())), o <= 1, false})
		ts[len(ts)-1].Ref = true
	}
	base := r.failover(FailNone)
	if base != nil {
		bm := base.D.Median()
		if f := r.failover(FailCooldown); f != nil {
			c := f.D.Median() - bm
			ts = append(ts, Target{"a candidate in cooldown costs < 1 ms",
				fmt.Sprintf("+%s (%s vs %s)", ms(c), ms(f.D.Median()), ms(bm)), c < time.Millisecond, false})
		}
		if f := r.failover(FailRefused); f != nil {
			c := f.D.Median() - bm
			ts = append(ts, Target{"a refused candidate costs < 10 ms",
				fmt.Sprintf("+%s (%s vs %s)", ms(c), ms(f.D.Median()), ms(bm)), c < 10*time.Millisecond, false})
		}
		if f := r.failover(FailBlackhole); f != nil {
			c := f.D.Median() - bm
			ts = append(ts, Target{fmt.Sprintf("a blackholed candidate costs ≤ probe timeout (%s) + 10 ms", ms(ProbeTimeout)),
				fmt.Sprintf("+%s (%s vs %s; p99 +%s)", ms(c), ms(f.D.Median()), ms(bm), ms(f.D.P99()-bm)),
				c <= ProbeTimeout+10*time.Millisecond, false})
		}
	}
	if len(r.Stall.Heap) > 2 {
		g, share, lo, hi := r.Stall.StallGrowth()
		ts = append(ts, Target{"hub memory flat while a subscriber stalls",
			fmt.Sprintf("second half of the run: heap %+.1f MiB while %s were published (%.2f %%); whole run within %s–%s while %s were published; stalled subscriber shed: %v",
				g/(1<<20), mib(float64(r.Stall.Events/2)*float64(r.Stall.PayloadBytes)), share*100, mib(lo), mib(hi),
				mib(float64(r.Stall.Events)*float64(r.Stall.PayloadBytes)), r.Stall.Shed != nil),
			share < 0.02, false})
	}
	if c := r.cold(ColdLocalSame); c != nil {
		ts = append(ts, Target{"warm local second invocation ≤ 50 ms to its first answer",
			fmt.Sprintf("%s median, %s p99 (same conversation)", ms(c.D.Median()), ms(c.D.P99())), c.D.Median() <= 50*time.Millisecond, false})
	}
	if c := r.cold(ColdLocalNewConv); c != nil {
		ts = append(ts, Target{"… and for a new conversation on the warm local browser (new page)",
			fmt.Sprintf("%s median, %s p99", ms(c.D.Median()), ms(c.D.P99())), c.D.Median() <= 50*time.Millisecond, false})
	}
	if d := r.Distributed; d != nil && len(d.InProcess) > 0 {
		dd := d.AcrossReplicas.Median() - d.InProcess.Median()
		got := fmt.Sprintf("%s vs %s = +%s", ms(d.AcrossReplicas.Median()), ms(d.InProcess.Median()), ms(dd))
		if len(d.BareRequest) > 0 {
			got += fmt.Sprintf(" (a bare NATS request and reply on the same broker: %s)", ms(d.BareRequest.Median()))
		}
		ts = append(ts, Target{"request from replica A to a client on replica B ≤ in-process hub + 0.5 ms median",
			got, dd <= 500*time.Microsecond, false})
	}
	ts = append(ts, r.scaleTargets()...)
	ts = append(ts, r.transportTargets()...)
	ts = append(ts, r.recorderTargets()...)
	ts = append(ts, r.newToolTargets()...)
	return append(ts, r.toolCallTargets()...)
}

// Render writes BENCHMARKS.md.
func (r *Results) Render(out io.Writer) {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	m := r.Machine
	p("# Benchmarks\n\n")
	p("Generated by `make bench` (`bench/cmd/benchreport`, a separate Go module) on %s UTC in %s. "+
		"Every figure of a section was measured in this one run, on the same browser, with the paths interleaved "+
		"(each round sends one command per path, in an order shuffled per round) so machine load hits them alike. "+
		"Ratios within a run are the figures to trust; absolute times move with the machine's load.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04"), r.Took.Round(time.Second))

	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s, %d cores |\n| memory | %s |\n| kernel | %s |\n| load average (1/5/15 min) | start %s, end %s |\n",
		m.CPU, m.Cores, m.MemTotal, m.Kernel, m.LoadStart, m.LoadEnd)
	p("| Go | %s |\n| Chromium | %s |\n| Node.js | %s |\n| browserchain | %s |\n", m.Go, m.Chromium, m.Node, m.Commit)
	for _, l := range m.Libraries {
		p("| %s | %s |\n", l[0], l[1])
	}
	p("\n")

	p("## Targets\n\n| target | measured | result |\n|---|---|---|\n")
	for _, t := range r.Targets() {
		p("| %s | %s | %s |\n", t.Goal, t.Measured, t.Verdict())
	}
	p("\n")

	// 1. evaluate.
	if raw := r.eval(PathRaw); raw != nil {
		p("## 1. `Runtime.evaluate` round trip\n\n")
		p("`Runtime.evaluate {\"expression\":\"1+1\",\"returnByValue\":true}` on a page, one command at a time, %d rounds "+
			"after warm-up. Baseline: the raw CDP WebSocket.\n\n", len(raw.D))
		p("| path | median | p99 | median vs raw | Δ median vs raw | what it includes |\n|---|---|---|---|---|---|\n")
		for _, e := range r.Eval {
			p("| %s | %s | %s | %s | %+.3f ms | %s |\n", e.Name, ms(e.D.Median()), ms(e.D.P99()),
				ratio(float64(e.D.Median()), float64(raw.D.Median())), msOf(e.D.Median()-raw.D.Median()), e.Note+viaNote(e.Via))
		}
		p("\nInside the extension (the `durationMs` it posts with each result: time spent in `chrome.debugger.sendCommand`):\n\n")
		p("| path | chrome.debugger median (p99) | transport overhead = round trip − chrome.debugger, median (p99) | of which: worker JS (arrival → post, − chrome.debugger) | of which: wire (server, hub, SSE into the worker, result POST) |\n|---|---|---|---|---|\n")
		for _, e := range r.Eval {
			if len(e.Inside) == 0 {
				continue
			}
			p("| %s | %s (%s) | %s (%s) | %s (%s) | %s (%s) |\n", e.Name, msf(e.Inside.Median()), msf(e.Inside.P99()),
				msf(e.Overhead.Median()), msf(e.Overhead.P99()), msf(e.Worker.Median()), msf(e.Worker.P99()),
				msf(e.Wire.Median()), msf(e.Wire.P99()))
		}
		if wp := r.Worker; len(wp.FetchPost) > 0 {
			p("\nWhat one loopback message costs inside the same service worker (its own clock, `performance.now`; "+
				"%d each, one at a time, to a Go handler on 127.0.0.1 that answers at once):\n\n", len(wp.FetchPost))
			p("| from the worker | median | p99 | vs raw CDP round trip |\n|---|---|---|---|\n")
			p("| `fetch` POST of a result-sized JSON body (as the relay posts each result) | %s | %s | %s |\n",
				msf(wp.FetchPost.Median()), msf(wp.FetchPost.P99()), ratio(wp.FetchPost.Median(), msOf(raw.D.Median())))
			p("| WebSocket echo of the same body | %s | %s | %s |\n",
				msf(wp.WSEcho.Median()), msf(wp.WSEcho.P99()), ratio(wp.WSEcho.Median(), msOf(raw.D.Median())))
		}
		p("\n")
	}

	// 2. screenshots.
	if len(r.Shots) > 0 {
		p("## 2. `Page.captureScreenshot`\n\n")
		p("A canvas of noise (PNG cannot compress it) captured with a clip of its size. Memory is this process's: "+
			"**peak heap** is the highest heap-object level (runtime/metrics `%s`, sampled every 200 µs) above the level "+
			"after a GC just before the call; **allocated** is `%s` during the call. The host-bridge figure includes the "+
			"in-process bridge (normally a process of its own); the extension's and local's browser-side memory (Chromium, "+
			"the Node driver) is not in this process. Baseline: raw CDP at the same size.\n\n", metricHeap, metricAllocs)
		p("| path | size (PNG / JSON result) | n | median | p99 | time vs raw | peak heap median (max) | allocated median | allocated vs raw |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, sz := range ShotSizes {
			var raw *ShotResult
			for i := range r.Shots {
				if r.Shots[i].Size == sz && r.Shots[i].Name == PathRaw {
					raw = &r.Shots[i]
				}
			}
			for _, s := range r.Shots {
				if s.Size != sz || s.Of != "" {
					continue
				}
				var tr, ar string = "n/a", "n/a"
				if raw != nil {
					tr = ratio(float64(s.D.Median()), float64(raw.D.Median()))
					ar = ratio(s.Alloc.Median(), raw.Alloc.Median())
				}
				p("| %s | %s: %.2f MB / %.2f MB | %d | %s | %s | %s | %s (%s) | %s | %s |\n", s.Name, sz.Label,
					float64(s.PNG)/1e6, float64(s.JSON)/1e6, len(s.D), ms(s.D.Median()), ms(s.D.P99()), tr,
					mib(s.Peak.Median()), mib(s.Peak.Max()), mib(s.Alloc.Median()), ar)
			}
		}
		p("\n")
		for _, s := range r.Shots {
			if len(s.Inside) > 0 {
				p("- %s, %s: the worker reported %s median inside `chrome.debugger.sendCommand` and %s median from the "+
					"request's arrival to its result's send (its own clock).\n", s.Name, s.Size.Label, msf(s.Inside.Median()), msf(s.Handled.Median()))
			}
		}
		p("\n")
		r.writeToolShots(p)
	}

	// 3. failover.
	if base := r.failover(FailNone); base != nil {
		p("## 3. Failover: time to the first answer\n\n")
		p("A fresh invocation (new Selector, new Client, macos turn) whose chain is [desktop-auto cdp-inspect at "+
			"127.0.0.1:<port>, fallback]. The fallback is an already connected cdp-inspect session on the same browser "+
			"(its Build returns at once; it is registered under the kind `local` so the attempts tell the two candidates "+
			"apart), so the figure is the failed candidate's cost plus one round trip. Probe timeout "+
			"%s (the selector's default). Baseline: the fallback alone.\n\n", ms(ProbeTimeout))
		p("| scenario | n | median | p99 | Δ median vs baseline | vs baseline | attempts (last sample) |\n|---|---|---|---|---|---|---|\n")
		for _, f := range r.Failover {
			p("| %s | %d | %s | %s | %+.3f ms | %s | `%s` |\n", f.Scenario, len(f.D), ms(f.D.Median()), ms(f.D.P99()),
				msOf(f.D.Median()-base.D.Median()), ratio(float64(f.D.Median()), float64(base.D.Median())), f.Attempts)
		}
		p("\n")
	}

	// 4. cold start.
	if len(r.Cold) > 0 {
		p("## 4. Cold start to the first answer\n\n")
		p("Each row starts from nothing of its own (a new connection, bridge, browser or driver; for the warm rows a " +
			"new invocation) and ends at the answer to `Runtime.evaluate 1+1`; closing what it opened is not timed. " +
			"Baseline: the raw CDP cold start (dial, attach, evaluate) on the running browser.\n\n")
		p("| start | n | median | p99 | median vs raw cold start | what it includes |\n|---|---|---|---|---|---|\n")
		for _, c := range r.Cold {
			rel := "×1.00 (baseline)"
			if c.Baseline != "" {
				if bc := r.cold(c.Baseline); bc != nil {
					rel = ratio(float64(c.D.Median()), float64(bc.D.Median()))
				}
			}
			p("| %s | %d | %s | %s | %s | %s |\n", c.Name, len(c.D), ms(c.D.Median()), ms(c.D.P99()), rel, c.Note)
			keys := make([]string, 0, len(c.Parts))
			for k := range c.Parts {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				share := float64(c.Parts[k].Median()) / float64(c.D.Median()) * 100
				p("| ↳ %s | %d | %s | %s | %.0f %% of the row's median | part of the row above |\n", k, len(c.Parts[k]),
					ms(c.Parts[k].Median()), ms(c.Parts[k].P99()), share)
			}
		}
		p("\n")
	}

	// 5. hub.
	if len(r.Hub) > 0 {
		p("## 5. Event hub\n\n")
		p("In-process hub, real SSE streams on 127.0.0.1 (`eventhubtest.Stream` readers that parse every envelope). "+
			"Short messages published to a conversation; the publisher stays at most %d events ahead of the slowest "+
			"reader, so this is delivery throughput without shedding. Latency is publish → parsed by a subscriber, "+
			"over every delivery. Baseline: 1 subscriber.\n\n", hubWindow)
		p("| subscribers | events | events/s | deliveries/s | deliveries/s vs 1 | latency median | p99 |\n|---|---|---|---|---|---|---|\n")
		base := r.Hub[0].DeliveriesPerSec()
		for _, h := range r.Hub {
			p("| %d | %d | %.0f | %.0f | %s | %s | %s |\n", h.Subscribers, h.Events, h.EventsPerSec(), h.DeliveriesPerSec(),
				ratio(h.DeliveriesPerSec(), base), ms(h.Latency.Median()), ms(h.Latency.P99()))
		}
		s := r.Stall
		if len(s.Heap) > 0 {
			g, share, lo, hi := s.StallGrowth()
			p("\n**One subscriber stalls.** %d events of %s each (%s in all) published to a conversation with one healthy "+
				"reader and one that stops reading after its first heartbeat (4 KiB socket receive buffer); hub defaults "+
				"(queue 256 events, write timeout 10 s). Heap objects after a GC at every 5 %% of the run:\n\n",
				s.Events, mib(float64(s.PayloadBytes)), mib(float64(s.Events)*float64(s.PayloadBytes)))
			p("| published | ")
			for i := range s.Heap {
				p("%d%% | ", i*5)
			}
			p("\n|---|")
			for range s.Heap {
				p("---|")
			}
			p("\n| heap | ")
			for _, h := range s.Heap {
				p("%s | ", mib(h))
			}
			p("\n\nOver the whole run the heap stayed between %s and %s (what the hub holds is bounded: the replay ring, at "+
				"most 1024 events / 8 MiB, and the stalled stream's queue of 256 events until it is shed); over the second "+
				"half it changed by %+.2f MiB while %s were published (%.2f %%). ", mib(lo), mib(hi), g/(1<<20),
				mib(float64(s.Events/2)*float64(s.PayloadBytes)), share*100)
			if s.Shed != nil {
				p("The stalled subscriber was shed (`%s`) after ≈%d events had been published, with %d events delivered "+
					"to it and %d still queued; the healthy subscriber read %d of %d.\n\n",
					s.Shed.Reason, s.ShedAfter, s.Shed.EventsDelivered, s.Shed.QueueLen, s.Delivered, s.Events)
			} else {
				p("The stalled subscriber was not shed during the run; the healthy subscriber read %d of %d.\n\n", s.Delivered, s.Events)
			}
		}
	}

	if d := r.Distributed; d != nil && len(d.InProcess) > 0 {
		p("## 6. Distributed hub (NATS)\n\n")
		p("Two replicas of `eventhub/natshub` on one real `nats-server` process on loopback; the client is a Go SSE "+
			"client on replica B that answers every request at once by POSTing its result to B (no browser: this is the hub "+
			"and proxy path), and the request is sent by replica A's proxy. The in-process row is the same client on a "+
			"single `eventhub.InProcess`. Interleaved, %d rounds after warm-up.\n\n", len(d.InProcess))
		p("| path | median | p99 | allocated per round trip |\n|---|---|---|---|\n")
		p("| `Runtime.evaluate`, in-process hub | %s | %s | |\n", ms(d.InProcess.Median()), ms(d.InProcess.P99()))
		p("| `Runtime.evaluate`, replica A → client on B | %s | %s | |\n", ms(d.AcrossReplicas.Median()), ms(d.AcrossReplicas.P99()))
		if len(d.BareRequest) > 0 {
			p("| floor: a bare core NATS request and its reply on the same broker (two connections, nothing of ours) | %s | %s | |\n",
				ms(d.BareRequest.Median()), ms(d.BareRequest.P99()))
		}
		p("| %s result, in-process hub | %s | %s | %s |\n", mib(float64(d.ShotBytes)), ms(d.ShotInProcess.Median()), ms(d.ShotInProcess.P99()), mib(d.ShotAllocInProcess))
		p("| %s result, posted to B for a caller on A (sent in parts) | %s | %s | %s |\n", mib(float64(d.ShotBytes)), ms(d.ShotAcross.Median()), ms(d.ShotAcross.P99()), mib(d.ShotAllocAcross))
		p("| roster convergence: registration on B → listed on A | %s | %s | |\n\n", ms(d.Convergence.Median()), ms(d.Convergence.P99()))
	}
	r.renderGuard(p)
	r.renderMCP(p)
	r.renderMCPNewTools(p)
	r.renderScale(p)
	r.renderTransport(p)
	r.renderToolCall(p)
	r.renderToolScenario(p)

	if r.Analysis != "" {
		p("%s\n", strings.TrimSpace(r.Analysis))
	}
	if len(r.Profiles) > 0 {
		p("\nCPU profiles of this run (not committed): %s.\n", strings.Join(r.Profiles, ", "))
	}
	_, _ = io.WriteString(out, b.String())
}

// viaNote says how a path's recorded results travelled, for the notes
// column: "; results: 1000 over the result socket".
func viaNote(via map[string]int) string {
	if len(via) == 0 {
		return ""
	}
	var parts []string
	if n := via["websocket"]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d over the result socket", n))
	}
	if n := via["http"]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d POSTed", n))
	}
	if n := via[""]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d unseen", n))
	}
	return "; results: " + strings.Join(parts, ", ")
}

// writeToolShots writes the screenshot tool's rows (tools.Page.Screenshot to
// a file, with its SHA-256), each against the round trip of the backend it
// ran over.
func (r *Results) writeToolShots(p func(string, ...any)) {
	var rows []ShotResult
	for _, s := range r.Shots {
		if s.Of != "" {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return
	}
	p("The screenshot tool (`tools.Page.Screenshot` with the clip's width and height: `location.href`, the capture, " +
		"the base64 data decoded as it is read into the file and its SHA-256) over the same backends and tabs. Baseline: " +
		"that backend's own `Page.captureScreenshot` round trip above.\n\n")
	p("| tool over | size (PNG) | n | median | p99 | time vs the backend's round trip | peak heap median (max) | allocated median | allocated vs the round trip |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range rows {
		var base *ShotResult
		for i := range r.Shots {
			if r.Shots[i].Size == s.Size && r.Shots[i].Name == s.Of {
				base = &r.Shots[i]
			}
		}
		tr, ar := "n/a", "n/a"
		if base != nil {
			tr = ratio(float64(s.D.Median()), float64(base.D.Median()))
			ar = ratio(s.Alloc.Median(), base.Alloc.Median())
		}
		p("| %s | %s: %.2f MB | %d | %s | %s | %s | %s (%s) | %s | %s |\n", s.Of, s.Size.Label, float64(s.PNG)/1e6,
			len(s.D), ms(s.D.Median()), ms(s.D.P99()), tr, mib(s.Peak.Median()), mib(s.Peak.Max()), mib(s.Alloc.Median()), ar)
	}
	p("\n")
}
