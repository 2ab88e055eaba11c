package harness

import (
	"context"
	"fmt"
	"time"
)

// EvalResult is the Runtime.evaluate round trip of one path.
type EvalResult struct {
	Name, Note string
	D          Durations
	// For paths whose client reports timings (the extension), per command in
	// ms: Inside is the time inside chrome.debugger, Overhead the round trip
	// minus it; Worker is the worker's own handling (arrival → result post,
	// minus chrome.debugger) and Wire the rest (round trip minus arrival →
	// post: server, hub, SSE delivery into the worker, the result POST).
	Inside, Overhead, Worker, Wire Floats
	// Via counts the recorded results of a path whose client reports
	// timings by transport ("websocket", "http").
	Via map[string]int `json:",omitempty"`
}

// MeasureEvaluate runs rounds of Runtime.evaluate("1+1") on every path of w,
// interleaved: each round sends one command per path, in an order shuffled
// per round (fixed seed), so machine load — and the work a path leaves
// behind in other processes, such as local's Node driver — hits every path
// alike. warmup rounds run first and are not recorded.
func MeasureEvaluate(ctx context.Context, w *World, rounds, warmup int) ([]EvalResult, error) {
	w.Server.record.Store(true)
	defer w.Server.record.Store(false)
	n := len(w.Paths)
	res := make([]EvalResult, n)
	for i, p := range w.Paths {
		res[i] = EvalResult{Name: p.Name, Note: p.Note, D: make(Durations, 0, rounds)}
	}
	order := newRounds(n)
	for r := range warmup + rounds {
		for _, i := range order.next() {
			p := w.Paths[i]
			t0 := time.Now()
			_, err := p.Send(ctx, "Runtime.evaluate", EvalParams)
			d := time.Since(t0)
			if err != nil {
				return nil, fmt.Errorf("benchreport: %s: %w", p.Name, err)
			}
			if r < warmup {
				continue
			}
			res[i].D = append(res[i].D, d)
			if p.Inside != nil {
				if res[i].Via == nil {
					res[i].Via = map[string]int{}
				}
				res[i].Via[string(w.Server.Via(w.Server.LastRequestID()))]++
				if in, handled, ok := p.Inside(); ok {
					rt := float64(d) / float64(time.Millisecond)
					res[i].Inside = append(res[i].Inside, in)
					res[i].Overhead = append(res[i].Overhead, rt-in)
					res[i].Worker = append(res[i].Worker, handled-in)
					res[i].Wire = append(res[i].Wire, rt-handled)
				}
			}
		}
	}
	return res, nil
}
