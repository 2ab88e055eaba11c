package harness

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestQuantileIsNearestRank(t *testing.T) {
	var d Durations
	for i := 100; i >= 1; i-- { // unsorted on purpose
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := d.Median(); got != 50*time.Millisecond {
		t.Errorf("median = %v, want 50ms", got)
	}
	if got := d.P99(); got != 99*time.Millisecond {
		t.Errorf("p99 = %v, want 99ms", got)
	}
	if got := d.Quantile(1); got != 100*time.Millisecond {
		t.Errorf("max = %v, want 100ms", got)
	}
	if got := (Durations{}).Median(); got != 0 {
		t.Errorf("empty median = %v, want 0", got)
	}
	if got := (Floats{}).Median(); !math.IsNaN(got) {
		t.Errorf("empty float median = %v, want NaN", got)
	}
}

func same(n int, d time.Duration) Durations {
	out := make(Durations, n)
	for i := range out {
		out[i] = d
	}
	return out
}

func TestTargetsReportMetAndMissed(t *testing.T) {
	ms := time.Millisecond
	r := &Results{
		Eval: []EvalResult{
			{Name: PathRaw, D: same(10, 1*ms)},
			{Name: PathInspect, D: same(10, 1200*time.Microsecond)}, // ×1.20: missed
			{Name: PathBridge, D: same(10, 1400*time.Microsecond)},  // +0.4 ms: met
			{Name: PathExtension, D: same(10, 3*ms), Inside: Floats{1, 1, 1}, Overhead: Floats{2, 2, 2}},
		},
		Failover: []FailoverResult{
			{Scenario: FailNone, D: same(5, 1*ms)},
			{Scenario: FailCooldown, D: same(5, 1500*time.Microsecond)}, // +0.5 ms: met
			{Scenario: FailRefused, D: same(5, 12*ms)},                  // +11 ms: missed
			{Scenario: FailBlackhole, D: same(5, ProbeTimeout+5*ms)},    // met
		},
		Cold: []ColdResult{{Name: ColdLocalSame, D: same(5, 20*ms)}},
	}
	want := map[string]bool{
		"cdp-inspect ≤ 1.10 × raw CDP median":                      false,
		"host-bridge ≤ raw CDP + 0.5 ms median":                    true,
		"a candidate in cooldown costs < 1 ms":                     true,
		"a refused candidate costs < 10 ms":                        false,
		"warm local second invocation ≤ 50 ms to its first answer": true,
	}
	got := map[string]bool{}
	for _, tg := range r.Targets() {
		got[tg.Goal] = tg.Met
		if strings.HasPrefix(tg.Goal, "extension transport overhead") && tg.Met {
			t.Errorf("extension overhead 2 ms reported as met")
		}
		if strings.HasPrefix(tg.Goal, "a blackholed candidate") && !tg.Met {
			t.Errorf("blackhole at probe timeout + 4 ms reported as missed: %s", tg.Measured)
		}
	}
	for goal, met := range want {
		if g, ok := got[goal]; !ok || g != met {
			t.Errorf("%q: met=%v (present %v), want %v", goal, g, ok, met)
		}
	}
}

func TestStallGrowthSeesAFlatAndAGrowingHeap(t *testing.T) {
	flat := HubStall{Events: 2000, PayloadBytes: 8192}
	growing := HubStall{Events: 2000, PayloadBytes: 8192}
	for i := range 21 {
		h := 20.0 * (1 << 20)
		if i > 2 {
			h += 4 << 20 // filled once, then flat
		}
		flat.Heap = append(flat.Heap, h)
		growing.Heap = append(growing.Heap, 20*(1<<20)+float64(i*100*8192)) // keeps every event
	}
	if _, share, _, _ := flat.StallGrowth(); share > 0.001 {
		t.Errorf("flat heap: share %.3f, want ≈ 0", share)
	}
	if _, share, _, _ := growing.StallGrowth(); share < 0.99 {
		t.Errorf("growing heap: share %.3f, want ≈ 1", share)
	}
}

func TestRenderFillsEverySection(t *testing.T) {
	r := &Results{
		Eval:     []EvalResult{{Name: PathRaw, D: same(3, time.Millisecond)}},
		Shots:    []ShotResult{{Name: PathRaw, Size: ShotSizes[0], D: same(2, time.Millisecond), Peak: Floats{1}, Alloc: Floats{1}}},
		Failover: []FailoverResult{{Scenario: FailNone, D: same(2, time.Millisecond)}},
		Cold:     []ColdResult{{Name: ColdRaw, D: same(2, time.Millisecond)}},
		Hub:      []HubThroughput{{Subscribers: 1, Events: 10, Elapsed: time.Second, Latency: same(10, time.Millisecond)}},
		Stall:    HubStall{Events: 20, PayloadBytes: 1, Heap: Floats{1, 1, 1}},
	}
	var b strings.Builder
	r.Render(&b)
	for _, h := range []string{"## Machine", "## Targets", "## 1.", "## 2.", "## 3.", "## 4.", "## 5."} {
		if !strings.Contains(b.String(), h) {
			t.Errorf("report lacks %q", h)
		}
	}
}

func TestRenderShowsTheRecordersCost(t *testing.T) {
	r := &Results{ToolScenario: []ToolScenarioResult{{
		Backend: GuardLocal, Steps: map[string]Durations{StepNavigate: same(2, time.Millisecond)},
		Total: same(3, 100*time.Millisecond), RecordedTotal: same(3, 102*time.Millisecond),
		RecordedBytes: []int{300 << 10, 310 << 10, 320 << 10}, RecordedEntries: []int{40, 40, 40},
	}}}
	var b strings.Builder
	r.Render(&b)
	for _, want := range []string{"| local | 100", "+2.0 %", "| 40 |", "≤ 1.03 × without (§12) | 102.0 ms vs 100.0 ms = ×1.020; ", "| met |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestRenderComparesEachNewToolWithTheFasterPeer(t *testing.T) {
	step := func(name string, d time.Duration) MCPStep { return MCPStep{Step: name, D: same(3, d)} }
	r := &Results{MCPNewTools: []MCPResult{
		{Server: MCPBrowserchain, Steps: []MCPStep{step(StepBack, 50*time.Millisecond), step(StepPDF, 100*time.Millisecond),
			step(StepConsole, 80*time.Millisecond)}},
		{Server: MCPChromeDevTools, Steps: []MCPStep{step(StepBack, 200*time.Millisecond), {Step: StepPDF, Err: errNoTool.Error()},
			step(StepConsole, 4*time.Millisecond)}},
		{Server: MCPPlaywright, Steps: []MCPStep{step(StepBack, 100*time.Millisecond), step(StepPDF, 150*time.Millisecond),
			{Step: StepConsole, Failed: 2, Err: "browser_console_messages: boom"}}},
	}}
	var b strings.Builder
	r.Render(&b)
	for _, want := range []string{
		"## 8b. MCP servers: the new tools",
		"| history: back | 50.0 ms (50.0 ms) | 200.0 ms (200.0 ms) | 100.0 ms (100.0 ms) | ×0.50 met |",
		"| save as PDF | 100.0 ms (100.0 ms) | no tool | 150.0 ms (150.0 ms) | ×0.67 met |",
		"| console messages | 80.0 ms (80.0 ms) | 4.000 ms (4.000 ms) | failed: browser_console_messages: boom | ×20.00 **missed** |",
		"| §8 new tools: browserchain's median ≤ the faster peer's, per step | 2 of 3 steps; over: console messages | **missed** |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
