package harness

import (
	"fmt"
	"time"
)

// scaleTargets are the goals of the scale phase.
func (r *Results) scaleTargets() []Target {
	s := r.Scale
	if s == nil || len(s.Runs) == 0 {
		return nil
	}
	var ts []Target
	for _, run := range s.Runs {
		if len(run.D) == 0 {
			continue
		}
		ts = append(ts, Target{Goal: fmt.Sprintf("scale: `Runtime.evaluate` p99 ≤ 10 × median, %d conversations at once over %d extension clients, %s",
			s.Conversations, s.Clients, run.Transport),
			Measured: fmt.Sprintf("p99 %s vs median %s = ×%.1f (%.0f commands/s)", ms(run.D.P99()), ms(run.D.Median()),
				float64(run.D.P99())/float64(run.D.Median()), float64(len(run.D))/run.Elapsed.Seconds()),
			Met: run.D.P99() <= 10*run.D.Median()})
	}
	if l := s.Local; l != nil && len(l.D) > 0 {
		ts = append(ts, Target{Goal: fmt.Sprintf("… and on local, %d conversations at once on one Chromium", l.Conversations),
			Measured: fmt.Sprintf("p99 %s vs median %s = ×%.1f (%.0f commands/s)", ms(l.D.P99()), ms(l.D.Median()),
				float64(l.D.P99())/float64(l.D.Median()), float64(len(l.D))/l.Elapsed.Seconds()),
			Met: l.D.P99() <= 10*l.D.Median()})
	}
	for _, run := range s.Runs {
		ts = append(ts, Target{Goal: "scale: memory per idle connected extension client ≤ 64 KiB (runtime side, heap), " + run.Transport,
			Measured: fmt.Sprintf("%s runtime side, %.1f of its goroutines; whole process %s heap + %s stacks (the simulated client's own share %s)",
				kib(run.Idle.HeapRuntime), run.Idle.GoroutinesRuntime, kib(run.Idle.Heap), kib(run.Idle.Stacks), kib(run.Idle.HeapClient)),
			Met: run.Idle.HeapRuntime <= 64<<10})
	}
	bad := s.Check()
	n := 0
	for _, run := range s.Runs {
		n += run.Commands + s.Conversations
	}
	if s.Local != nil {
		n += s.Local.Commands
	}
	ts = append(ts, Target{Goal: "scale: zero lost, duplicated or cross-delivered answers",
		Measured: fmt.Sprintf("%d lost, %d duplicated, %d cross-delivered of %d answers", bad.Lost, bad.Duplicated, bad.CrossDelivered, n),
		Met:      !bad.Failed()})
	ts = append(ts, Target{Goal: "scale: the phase runs in under 3 minutes",
		Measured: s.Took.Round(100 * time.Millisecond).String(), Met: s.Took < 3*time.Minute})
	return ts
}

// kib formats bytes in KiB.
func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

// renderScale writes the scale section.
func (r *Results) renderScale(p func(string, ...any)) {
	s := r.Scale
	if s == nil || len(s.Runs) == 0 {
		return
	}
	p("## 9. Scale: many conversations at once\n\n")
	p("%d simulated extension clients in this process (`hostproxy/vellumtest` with an answer function instead of a browser, "+
		"over the real wire: the SSE stream, each request on its own goroutine, its own HTTP transport with Chrome's 6 "+
		"connections per host), each the one extension of its own user (a token minted for that user), connected to the "+
		"harness server on 127.0.0.1 (auth middleware, in-process hub, proxy). %d conversations, conversation *i* of user "+
		"*i* mod %d, each a Selector client over the extension provider (so each command also picks its user's client "+
		"from the roster); every conversation sends %d `Runtime.evaluate` of a string literal holding its own token, one "+
		"after another, all conversations at once. The client answers the literal's value with its client id appended, "+
		"so each answer shows whose it is. Twice, each on a fresh server: results on the result socket (as the reference "+
		"extension sends them), then one POST per result (as the Vellum extension does). The phase took %s.\n\n",
		s.Clients, s.Conversations, s.Clients, s.Rounds, s.Took.Round(100*time.Millisecond))
	p("| load | results | commands | commands/s | median | p99 | p99 / median | lost | duplicated | cross-delivered |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range s.Runs {
		if len(run.D) == 0 {
			continue
		}
		p("| extension: %d conversations over %d clients | %s | %d | %.0f | %s | %s | ×%.1f | %d | %d | %d |\n", s.Conversations, s.Clients,
			run.Transport, run.Commands, float64(len(run.D))/run.Elapsed.Seconds(), ms(run.D.Median()), ms(run.D.P99()),
			float64(run.D.P99())/float64(run.D.Median()), run.Lost, run.Duplicated, run.CrossDelivered)
	}
	if l := s.Local; l != nil && len(l.D) > 0 {
		p("| local: %d conversations on one Chromium (page cap %d) | — | %d | %.0f | %s | %s | ×%.1f | %d | %d | %d |\n",
			l.Conversations, l.MaxPages, l.Commands, float64(len(l.D))/l.Elapsed.Seconds(), ms(l.D.Median()), ms(l.D.P99()),
			float64(l.D.P99())/float64(l.D.Median()), l.Lost, l.Duplicated, l.CrossDelivered)
	}
	if bad := s.Check(); bad.FirstError != "" {
		p("\nFirst wrong answer: `%s`.\n", cell(bad.FirstError))
	}
	p("\nMemory and goroutines per unit, after GCs. Heap objects from runtime/metrics; the split by side from a heap " +
		"profile at `MemProfileRate` 1 over the step, each allocation's stack deciding: the runtime's net/http server " +
		"connections, eventhub, hostproxy, auth, the selector — or the simulated client's vellumtest code and net/http " +
		"transport; goroutines by the pprof label of whoever started them.\n\n")
	p("| step | results | per | heap, whole process | runtime side | simulated client | neither | goroutine stacks | goroutines (runtime side) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range s.Runs {
		for _, c := range []struct {
			name string
			c    ScaleCost
		}{{fmt.Sprintf("%d clients connected, idle (connected in %s)", s.Clients, ms(run.ConnectTook)), run.Idle},
			{fmt.Sprintf("%d conversations, one command each", s.Conversations), run.Conv}} {
			p("| %s | %s | %d | %s | %s | %s | %s | %s | %.2f (%.2f) |\n", c.name, run.Transport, c.c.Units, kib(c.c.Heap),
				kib(c.c.HeapRuntime), kib(c.c.HeapClient), kib(c.c.HeapOther), kib(c.c.Stacks), c.c.Goroutines, c.c.GoroutinesRuntime)
		}
	}
	p("\n")
}
