package harness

import (
	"strings"
	"testing"
	"time"
)

func TestFindRefReadsEachServersSnapshotFormat(t *testing.T) {
	cases := []struct {
		name, snapshot, role, label, want string
		useUID                            bool
	}{
		{"browserchain", "- heading \"Profile\" [level=1]\n- textbox \"Display name\" [ref=e17]\n- button \"Apply\" [ref=e18]\n",
			"button", "Apply", "e18", false},
		{"playwright", "- generic [ref=e2]:\n  - textbox \"Display name\" [ref=e5]\n  - button \"Apply\" [ref=e6] [cursor=pointer]\n",
			"textbox", "Display name", "e5", false},
		{"chrome-devtools", "uid=1_0 RootWebArea \"bench form\"\n  uid=1_3 textbox \"Display name\"\n  uid=1_4 button \"Apply\"\n",
			"button", "Apply", "1_4", true},
	}
	for _, c := range cases {
		re := bracketRef
		if c.useUID {
			re = uidRef
		}
		got, err := findRef(re, c.snapshot, c.role, c.label)
		if err != nil || got != c.want {
			t.Errorf("%s: findRef = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := findRef(bracketRef, "- button \"Other\" [ref=e1]\n", "button", "Apply"); err == nil {
		t.Error("findRef found a button that is not in the snapshot")
	}
}

func TestRenderMCPShowsUnavailablePeerAndRatios(t *testing.T) {
	step := func(name string, d time.Duration, bytes float64) MCPStep {
		return MCPStep{Step: name, D: same(10, d), Bytes: Floats{bytes}, Structured: Floats{0}}
	}
	r := &Results{MCP: []MCPResult{
		{Server: MCPBrowserchain, Tools: 16, RSS: 20 << 20, Cold: same(3, 30*time.Millisecond),
			Steps: []MCPStep{step(StepNavigate, 10*time.Millisecond, 100)}},
		{Server: MCPPlaywright, Tools: 25, RSS: 150 << 20, Cold: same(3, 500*time.Millisecond),
			Steps: []MCPStep{step(StepNavigate, 25*time.Millisecond, 300)}},
		{Server: MCPChromeDevTools, Unavailable: "initialize: exit status 1 | no\nbrowser"},
	}}
	var b strings.Builder
	r.Render(&b)
	out := b.String()
	for _, want := range []string{
		"| navigate (form page) | " + MCPPlaywright + " | 10 | 25.0 ms | 25.0 ms | ×2.50 | 300 B | none |",
		"| " + MCPChromeDevTools + " | n/a | n/a | n/a | n/a | 0 | n/a | not available: initialize: exit status 1 \\| no browser |",
		"| " + MCPBrowserchain + " | 16 | 20.0 MiB | 30.0 ms | 30.0 ms | 3 | 100 B | measured |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q\n%s", want, out)
		}
	}
}

func TestRenderMCPShowsAFailedStepOnItsRow(t *testing.T) {
	r := &Results{MCP: []MCPResult{
		{Server: MCPBrowserchain, Tools: 16, Cold: same(1, time.Millisecond),
			Steps: []MCPStep{{Step: StepScreenshot, D: same(2, 50*time.Millisecond), Bytes: Floats{100, 100}, Structured: Floats{0, 0}}}},
		{Server: MCPChromeDevTools, Tools: 29, Cold: same(1, time.Millisecond), Stopped: "after round 2: a step failed in two rounds",
			Steps: []MCPStep{
				{Step: StepNavigate, D: same(2, 20*time.Millisecond), Bytes: Floats{10, 10}, Structured: Floats{0, 0}},
				{Step: StepScreenshot, Failed: 2, Err: "take_screenshot: context deadline exceeded"},
			}},
	}}
	var b strings.Builder
	r.Render(&b)
	out := b.String()
	for _, want := range []string{
		"| " + StepScreenshot + " | " + MCPChromeDevTools + " | 0 | n/a | n/a | n/a | n/a | n/a | 2: take_screenshot: context deadline exceeded |",
		"| " + StepScreenshot + " | " + MCPBrowserchain + " | 2 | 50.0 ms | 50.0 ms | ×1.00 (baseline) | 100 B | none | 0 |",
		"| measured; rounds stopped after round 2: a step failed in two rounds |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q\n%s", want, out)
		}
	}
}

func TestRenderGuardRatioAgainstNoPolicy(t *testing.T) {
	r := &Results{Guard: []GuardResult{
		{Backend: GuardInspect, D: same(20, 8*time.Millisecond)},
		{Backend: GuardInspect, Policy: true, D: same(20, 12*time.Millisecond)},
	}}
	var b strings.Builder
	r.Render(&b)
	want := "| cdp-inspect | allow-list (fixture host) | 20 | 12.0 ms | 12.0 ms | ×1.50 | +4.000 ms |"
	if !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q\n%s", want, b.String())
	}
}

func TestOwnPageAnswersGiveThePageToRaise(t *testing.T) {
	devtools := "## Pages\n1: about:blank\n2: bench form (http://127.0.0.1:1/form)\n3: about:blank [selected]\n"
	if m := devtoolsSelected.FindStringSubmatch(devtools); m == nil || m[1] != "3" {
		t.Errorf("devtoolsSelected = %v, want page 3", m)
	}
	playwright := "### Open tabs\n- 0: [](about:blank)\n- 1: (current) [](about:blank)\n"
	if m := playwrightCurrent.FindStringSubmatch(playwright); m == nil || m[1] != "1" {
		t.Errorf("playwrightCurrent = %v, want tab 1", m)
	}
	if devtoolsSelected.MatchString("1: about:blank\n") || playwrightCurrent.MatchString("- 0: [](about:blank)\n") {
		t.Error("a list without a selected or current entry matched")
	}
}
