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
	// Inside holds the client-reported in-browser time per command (ms) and
	// Overhead the round trip minus it (ms), for paths that report it.
	Inside, Overhead Floats
}

// MeasureEvaluate runs rounds of Runtime.evaluate("1+1") on every path of w,
// interleaved: each round sends one command per path, starting at a rotating
// path, so machine load hits every path alike. warmup rounds run first and
// are not recorded.
func MeasureEvaluate(ctx context.Context, w *World, rounds, warmup int) ([]EvalResult, error) {
	w.Server.record.Store(true)
	defer w.Server.record.Store(false)
	n := len(w.Paths)
	res := make([]EvalResult, n)
	for i, p := range w.Paths {
		res[i] = EvalResult{Name: p.Name, Note: p.Note, D: make(Durations, 0, rounds)}
	}
	for r := range warmup + rounds {
		for k := range n {
			i := (k + r) % n
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
				if in, ok := p.Inside(); ok {
					rt := float64(d) / float64(time.Millisecond)
					res[i].Inside = append(res[i].Inside, in)
					res[i].Overhead = append(res[i].Overhead, rt-in)
				}
			}
		}
	}
	return res, nil
}
