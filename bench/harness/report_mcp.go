package harness

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// cell makes s safe inside a Markdown table cell (one line, no bare pipe).
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// bytesf formats a byte count for the MCP table.
func bytesf(b float64) string {
	switch {
	case math.IsNaN(b):
		return "n/a"
	case b < 10_000:
		return fmt.Sprintf("%.0f B", b)
	default:
		return fmt.Sprintf("%.1f kB", b/1000)
	}
}

// renderGuard writes the section on the guards' cost per tool call.
func (r *Results) renderGuard(p func(string, ...any)) {
	if len(r.Guard) == 0 {
		return
	}
	p("## 7. Guards: cost per tool call\n\n")
	p("One `tools.Extract` call (selector `h1` of a small form page) through a fresh per-call Client, without and with a "+
		"`guard.Policy` on its context (allow-list of the fixture host plus its development loopback opt-in: the guard's "+
		"URL checks before and after the action and the Fetch interception of document requests, which the guarded "+
		"call enables and disables around the action); the rows \"kept Client\" run with `tools.Options.KeepClients` "+
		"(as examples/mcp does): the conversation keeps its Client, and the guard its interception, between calls. "+
		"%d calls per row after warm-up, the rows interleaved "+
		"in an order shuffled per round; each row has its own conversation; cdp-inspect on a headless Chromium of its own, "+
		"host-bridge and the extension through the world's desktop bridge and reference extension; %d further tabs (the "+
		"user's) open in each of the two browsers, since the popup hold of cdp-inspect and host-bridge sees every open tab. "+
		"Baseline: the same backend without a policy.\n\n", len(r.Guard[0].D), GuardUserTabs)
	p("| backend | policy | n | median | p99 | median vs no policy | Δ median vs no policy |\n|---|---|---|---|---|---|---|\n")
	for _, g := range r.Guard {
		var base *GuardResult
		for i := range r.Guard {
			if r.Guard[i].Backend == g.Backend && !r.Guard[i].Policy {
				base = &r.Guard[i]
			}
		}
		pol, rel, delta := "none", "×1.00 (baseline)", "—"
		if g.Policy {
			pol = "allow-list (fixture host)"
			if base != nil {
				rel = ratio(float64(g.D.Median()), float64(base.D.Median()))
				delta = fmt.Sprintf("%+.3f ms", msOf(g.D.Median()-base.D.Median()))
			}
		}
		p("| %s | %s | %d | %s | %s | %s | %s |\n", g.Backend, pol, len(g.D), ms(g.D.Median()), ms(g.D.P99()), rel, delta)
	}
	p("\n")
}

// renderMCP writes the section on the MCP servers over one browser.
func (r *Results) renderMCP(p func(string, ...any)) {
	if len(r.MCP) == 0 {
		return
	}
	var bc *MCPResult
	for i := range r.MCP {
		if r.MCP[i].Server == MCPBrowserchain && r.MCP[i].Unavailable == "" {
			bc = &r.MCP[i]
		}
	}
	rounds := 0
	for _, m := range r.MCP {
		if st := m.Step(StepNavigate); st != nil {
			rounds = max(rounds, len(st.D))
		}
	}
	p("## 8. MCP servers: one scenario, one browser\n\n")
	p("The same scenario through three MCP servers, each its own process driven over stdio by the go-sdk client "+
		"(`CommandTransport`), all attached to one headless Chromium the harness started with a debugging port: "+
		"browserchain's `examples/mcp` (built binary, `-cdp-inspect -cdp-port N -mode cdp-inspect -local=false`; "+
		"run twice: as is, and with every snapshot asking for `interactive: true`), "+
		"Chrome DevTools MCP (`--browserUrl http://127.0.0.1:N`, usage statistics and CrUX off) and Playwright MCP "+
		"(`--cdp-endpoint http://127.0.0.1:N`), from npm as scripts/setup.sh pins them. Pages on 127.0.0.1: a form "+
		"(one labelled field, a button that writes the field into the page), an article of %d words, a page of "+
		"≈%d elements. The field's and the button's ref (uid) are read from each server's own snapshot text. "+
		"The form's steps end with two screenshots: one right after the extract, one after the page was left "+
		"alone for 300 ms (untimed). "+
		"%d rounds after warm-up; each round runs the whole scenario once per server, the servers in an order "+
		"shuffled per round. **Bytes** is what a call returns to the model: the text of its text content plus the "+
		"base64 of its images; **structured** is the JSON size of `structuredContent` (a client that passes both to "+
		"the model pays both). Each server drives a page of its own, brought to the front before each of its rounds "+
		"(Chrome DevTools MCP: `new_page`, then `select_page` with `bringToFront`; Playwright MCP: `browser_tabs` "+
		"new, then select; browserchain: the tab cdp-inspect opens for its conversation), untimed. A call that "+
		"errs or takes longer than %s fails its step; **failed** counts the rounds in which the step failed or "+
		"could not run because a step it needs failed, with the first reason. Baseline: browserchain.\n\n",
		ArticleWords, BigElements, rounds, mcpCallTimeout)
	p("| step | server | n | median | p99 | median vs browserchain | bytes (median) | structured (median) | failed |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, step := range MCPSteps {
		for i := range r.MCP {
			m := &r.MCP[i]
			if m.Unavailable != "" {
				continue
			}
			st := m.Step(step)
			if st == nil || len(st.D) == 0 && st.Failed == 0 {
				continue
			}
			failed := "0"
			if st.Failed > 0 {
				failed = fmt.Sprintf("%d: %s", st.Failed, cell(truncate(st.Err, 160)))
			}
			if len(st.D) == 0 {
				p("| %s | %s | 0 | n/a | n/a | n/a | n/a | n/a | %s |\n", step, m.Server, failed)
				continue
			}
			rel := "×1.00 (baseline)"
			if m != bc {
				rel = "n/a"
				if bs := bc.stepOrNil(step); bs != nil && len(bs.D) > 0 {
					rel = ratio(float64(st.D.Median()), float64(bs.D.Median()))
				}
			}
			structured := "none"
			if st.Structured.Max() > 0 {
				structured = bytesf(st.Structured.Median())
			}
			p("| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", step, m.Server, len(st.D), ms(st.D.Median()), ms(st.D.P99()),
				rel, bytesf(st.Bytes.Median()), structured, failed)
		}
	}
	p("\nPer server: its tools (tools/list), its resident memory after the rounds (`VmRSS` of the process and its " +
		"children), its cold start (spawn → `initialize` answered, a fresh process per sample) and the whole " +
		"scenario's bytes to the model (sum of the step medians).\n\n")
	p("| server | tools | RSS after the rounds | cold start median | cold start p99 | n | scenario bytes | status |\n|---|---|---|---|---|---|---|---|\n")
	for _, m := range r.MCP {
		if m.Unavailable != "" {
			p("| %s | %s | n/a | n/a | n/a | 0 | n/a | not available: %s |\n", m.Server, toolsCell(m.Tools), cell(m.Unavailable))
			continue
		}
		var total float64
		for _, st := range m.Steps {
			if len(st.Bytes) > 0 {
				total += st.Bytes.Median()
			}
		}
		status := "measured"
		if m.Stopped != "" {
			status = "measured; rounds stopped " + cell(m.Stopped)
		}
		p("| %s | %d | %s | %s | %s | %d | %s | %s |\n", m.Server, m.Tools, mib(m.RSS), ms(m.Cold.Median()),
			ms(m.Cold.P99()), len(m.Cold), bytesf(total), status)
	}
	p("\n")
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func toolsCell(n int) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

// stepOrNil is Step on a possibly nil result.
func (r *MCPResult) stepOrNil(step string) *MCPStep {
	if r == nil {
		return nil
	}
	return r.Step(step)
}
