package harness

import "fmt"

// transportTarget is the goal for the extension's socket
// transports, in ms of median overhead.
const transportTarget = 0.3

func (r *Results) transport(name string) *TransportResult {
	for i := range r.Transport {
		if r.Transport[i].Name == name {
			return &r.Transport[i]
		}
	}
	return nil
}

// transportTargets are the §10 rows of the targets table: the overhead over
// each socket with its ratio to SSE + POST measured in the same run, and
// SSE + POST itself for comparison.
func (r *Results) transportTargets() []Target {
	sse := r.transport(TransportSSEPost)
	var ts []Target
	for _, name := range []string{TransportOneSocket, TransportRemoteTLS} {
		t := r.transport(name)
		if t == nil || len(t.Overhead) == 0 {
			continue
		}
		o := t.Overhead.Median()
		m := fmt.Sprintf("%s (round trip %s, chrome.debugger %s)", msf(o), ms(t.D.Median()), msf(t.Inside.Median()))
		if sse != nil && len(sse.Overhead) > 0 {
			m += fmt.Sprintf("; %s of SSE + POST's %s", ratio(o, sse.Overhead.Median()), msf(sse.Overhead.Median()))
		}
		ts = append(ts, Target{fmt.Sprintf("extension transport overhead (round trip − chrome.debugger time) over the %s ≤ %.1f ms median", name, transportTarget),
			m, o <= transportTarget, false})
	}
	if sse != nil && len(sse.Overhead) > 0 {
		o := sse.Overhead.Median()
		ts = append(ts, Target{"… the same over " + TransportSSEPost + " (the Vellum extension's transport), same run",
			fmt.Sprintf("%s (round trip %s, chrome.debugger %s)", msf(o), ms(sse.D.Median()), msf(sse.Inside.Median())), o <= transportTarget, true})
	}
	return ts
}

func (r *Results) renderTransport(p func(string, ...any)) {
	if len(r.Transport) == 0 {
		return
	}
	sse := r.transport(TransportSSEPost)
	p("## 10. Extension transports side by side\n\n")
	p("The reference extension in three headless Chromiums at once, each pinned by its own backend, against one "+
		"server: over the result socket in its subscribed mode (one WebSocket for requests, cancels, results and "+
		"events), over SSE + POST (a server without the socket route), and in remote mode over TLS on loopback "+
		"(hostproxy/remote). `Runtime.evaluate(\"1+1\")`, %d rounds after warm-up, interleaved in a shuffled order "+
		"per round. Overhead = round trip − the `durationMs` the extension reports (time inside "+
		"`chrome.debugger.sendCommand`).\n\n", len(r.Transport[0].D))
	p("| transport | round trip median (p99) | chrome.debugger median | overhead median (p99) | overhead vs SSE + POST | what it is |\n|---|---|---|---|---|---|\n")
	for _, t := range r.Transport {
		vs := "n/a"
		if sse != nil && len(sse.Overhead) > 0 && len(t.Overhead) > 0 {
			vs = ratio(t.Overhead.Median(), sse.Overhead.Median())
		}
		p("| %s | %s (%s) | %s | %s (%s) | %s | %s |\n", t.Name, ms(t.D.Median()), ms(t.D.P99()), msf(t.Inside.Median()),
			msf(t.Overhead.Median()), msf(t.Overhead.P99()), vs, t.Note)
	}
	p("\n")
}
